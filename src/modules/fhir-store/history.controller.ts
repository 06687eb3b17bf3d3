import { Controller, Get, Query } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiParam, ApiQuery, ApiTags } from '@nestjs/swagger';
import type { FhirVersion } from '@app/fhir';
import { FhirIdParam, FhirRoute, FhirTypeParam, FhirVersionParam } from '../../fhir-http';
import { Tenant } from '../../tenancy/use-tenant.decorator';
import type { TenantContext } from '../../tenancy/tenant-context';
import type { QueryParams } from './fhir-store.service';
import { HistoryService } from './history.service';

const VERSION = { name: 'version', description: 'FHIR version: r4, stu3 or dstu2 (any case)', example: 'r4' };
const TYPE = { name: 'type', description: 'FHIR resource type', example: 'Patient' };
const HISTORY_BUNDLE = {
  description:
    'history Bundle, newest first: entries with fullUrl, request, response (status, etag, lastModified); ' +
    'a deleted version has no resource and a response.outcome naming id and version',
};

function HistoryQueryDocs(): MethodDecorator & ClassDecorator {
  return (target: object, key?: string | symbol, descriptor?: PropertyDescriptor) => {
    for (const query of [
      { name: '_since', required: false, description: 'only versions written at or after this instant' },
      { name: '_at', required: false, description: 'versions current at some time in this period' },
      { name: '_count', required: false, description: 'page size (default 10, at most 100)' },
      { name: '_skip', required: false, description: 'offset of the page' },
    ]) {
      ApiQuery(query)(target, key as string, descriptor as PropertyDescriptor);
    }
  };
}

/**
 * History at instance, type and system level (https://hl7.org/fhir/R4/http.html#history). Comes
 * before search and the store (`FHIR_CONTROLLERS` in src/modules/fhir-routes.module.ts):
 * `/{v}/_history` would be a type search there, and `/{v}/{type}/_history` a read of the id `_history`.
 */
@ApiTags('FHIR')
@ApiParam(VERSION)
@Controller()
export class HistoryController {
  constructor(private readonly history: HistoryService) {}

  @Get(':version/_history')
  @ApiOperation({ summary: 'system history: every version of every resource in the caller scope' })
  @HistoryQueryDocs()
  @ApiOkResponse(HISTORY_BUNDLE)
  @FhirRoute()
  system(
    @Tenant() ctx: TenantContext,
    @FhirVersionParam() version: FhirVersion,
    @Query() query: QueryParams,
  ) {
    return this.history.list(ctx, version, undefined, query);
  }

  @Get(':version/:type/_history')
  @ApiOperation({ summary: 'type history: every version of every resource of the type' })
  @ApiParam(TYPE)
  @HistoryQueryDocs()
  @ApiOkResponse(HISTORY_BUNDLE)
  @FhirRoute()
  type(
    @Tenant() ctx: TenantContext,
    @FhirVersionParam() version: FhirVersion,
    @FhirTypeParam() type: string,
    @Query() query: QueryParams,
  ) {
    return this.history.list(ctx, version, type, query);
  }

  @Get(':version/:type/:id/_history')
  @ApiOperation({ summary: 'instance history: every version of one resource' })
  @ApiParam(TYPE)
  @ApiParam({ name: 'id', description: 'logical id', example: 'example' })
  @HistoryQueryDocs()
  @ApiOkResponse(HISTORY_BUNDLE)
  @FhirRoute()
  instance(
    @Tenant() ctx: TenantContext,
    @FhirVersionParam() version: FhirVersion,
    @FhirTypeParam() type: string,
    @FhirIdParam() id: string,
    @Query() query: QueryParams,
  ) {
    return this.history.instance(ctx, version, type, id, query);
  }
}
