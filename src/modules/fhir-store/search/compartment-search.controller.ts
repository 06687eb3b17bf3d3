import { Controller, Get, Headers, Param } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiParam, ApiResponse, ApiTags } from '@nestjs/swagger';
import type { FhirVersion } from '@app/fhir';
import { FhirIdParam, FhirSearchParams, FhirTypeParam, FhirVersionParam } from '../../../fhir-http';
import type { SearchPairs } from '../../../fhir-http/search-pairs';
import { Tenant } from '../../../tenancy/use-tenant.decorator';
import type { TenantContext } from '../../../tenancy/tenant-context';
import { PATIENT_ID, SEARCHSET, SearchQueryDocs, SearchRoute, TYPE } from './search.controller';
import { SearchService } from './search.service';

/**
 * Compartment search `GET /{v}/{compartment}/{id}/{type}` (https://hl7.org/fhir/R4/http.html#vsearch).
 * Its path is made only of parameters, so it is registered after every other FHIR route
 * (feature-modules.ts): operations such as `/{v}/{type}/{id}/$meta` must not be taken for a type.
 */
@ApiTags('FHIR search')
@Controller()
export class CompartmentSearchController {
  constructor(private readonly searches: SearchService) {}

  @Get(':version/:compartment/:id/:type')
  @SearchRoute()
  @ApiParam({
    name: 'compartment',
    description: 'the compartment: only Patient is served',
    example: 'Patient',
  })
  @ApiParam(PATIENT_ID)
  @ApiParam(TYPE)
  @ApiOperation({ summary: 'compartment search: the type-level search within the Patient compartment' })
  @SearchQueryDocs()
  @ApiOkResponse(SEARCHSET)
  @ApiResponse({ status: 404, description: 'no such Patient in the caller scope (OperationOutcome)' })
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
}
