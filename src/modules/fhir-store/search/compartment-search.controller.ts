import { applyDecorators, Controller, Get, Headers, Param, Post } from '@nestjs/common';
import {
  ApiBody,
  ApiConsumes,
  ApiOkResponse,
  ApiOperation,
  ApiParam,
  ApiResponse,
  ApiTags,
  ApiUnsupportedMediaTypeResponse,
} from '@nestjs/swagger';
import type { FhirVersion } from '@app/fhir';
import { FhirIdParam, FhirSearchParams, FhirTypeParam, FhirVersionParam } from '../../../fhir-http';
import type { SearchPairs } from '../../../fhir-http/search-pairs';
import { Tenant } from '../../../tenancy/use-tenant.decorator';
import type { TenantContext } from '../../../tenancy/tenant-context';
import { PATIENT_ID, SEARCHSET, SearchQueryDocs, SearchRoute, TYPE } from './search.controller';
import { SearchService } from './search.service';

const COMPARTMENT = {
  name: 'compartment',
  description: 'the compartment: only Patient is served',
  example: 'Patient',
};
const NO_PATIENT = { status: 404, description: 'no such Patient in the caller scope (OperationOutcome)' };

/** What every compartment route documents: the compartment and patient (and type) in its path, its answers. */
function CompartmentDocs(options: { type: boolean }): MethodDecorator {
  return applyDecorators(
    ApiParam(COMPARTMENT),
    ApiParam(PATIENT_ID),
    ...(options.type ? [ApiParam(TYPE)] : []),
    ApiOkResponse(SEARCHSET),
    ApiResponse(NO_PATIENT),
  );
}

/**
 * Compartment search in the three forms of https://hl7.org/fhir/R4/http.html#vsearch:
 * `GET /{v}/{compartment}/{id}/{type}`, `POST /{v}/{compartment}/{id}/{type}/_search` (a form
 * body merged after the query, as the type-level `_search`) and `GET /{v}/{compartment}/{id}/*`
 * (every type of the compartment). Their paths are made of parameters, so they are registered
 * after every other FHIR route (feature-modules.ts): operations such as `/{v}/{type}/{id}/$meta`
 * must not be taken for a type; the literal `*` comes before `:type`.
 */
@ApiTags('FHIR search')
@Controller()
export class CompartmentSearchController {
  constructor(private readonly searches: SearchService) {}

  @Get(':version/:compartment/:id/\\*')
  @SearchRoute()
  @CompartmentDocs({ type: false })
  @ApiOperation({
    summary:
      'compartment search over every type of the Patient compartment (`_type` narrows it), the patient included',
  })
  @SearchQueryDocs()
  searchWholeCompartment(
    @Tenant() ctx: TenantContext,
    @FhirVersionParam() version: FhirVersion,
    @Param('compartment') compartment: string,
    @FhirIdParam() id: string,
    @FhirSearchParams() params: SearchPairs,
    @Headers('prefer') prefer: string | undefined,
  ) {
    return this.searches.compartmentSearch(ctx, version, compartment, id, undefined, params, prefer);
  }

  @Get(':version/:compartment/:id/:type')
  @SearchRoute()
  @CompartmentDocs({ type: true })
  @ApiOperation({ summary: 'compartment search: the type-level search within the Patient compartment' })
  @SearchQueryDocs()
  searchCompartment(
    @Tenant() ctx: TenantContext,
    @FhirVersionParam() version: FhirVersion,
    @Param('compartment') compartment: string,
    @FhirIdParam() id: string,
    @FhirTypeParam() type: string,
    @FhirSearchParams() params: SearchPairs,
    @Headers('prefer') prefer: string | undefined,
  ) {
    return this.searches.compartmentSearch(ctx, version, compartment, id, type, params, prefer);
  }

  @Post(':version/:compartment/:id/:type/_search')
  @SearchRoute({ kind: 'read' })
  @CompartmentDocs({ type: true })
  @ApiOperation({
    summary: 'compartment search with the parameters in a form body (merged after the query string)',
  })
  @ApiConsumes('application/x-www-form-urlencoded')
  @ApiBody({
    description: 'search parameters as a form',
    schema: { type: 'object', additionalProperties: { type: 'string' } },
  })
  @ApiUnsupportedMediaTypeResponse({ description: 'the body is not application/x-www-form-urlencoded' })
  searchCompartmentPost(
    @Tenant() ctx: TenantContext,
    @FhirVersionParam() version: FhirVersion,
    @Param('compartment') compartment: string,
    @FhirIdParam() id: string,
    @FhirTypeParam() type: string,
    @FhirSearchParams() params: SearchPairs,
    @Headers('prefer') prefer: string | undefined,
  ) {
    // the form body is already merged into `params` (FhirSearchParams): the GET form's search
    return this.searchCompartment(ctx, version, compartment, id, type, params, prefer);
  }
}
