import { applyDecorators, Controller, Delete, Get, Headers, Post } from '@nestjs/common';
import {
  ApiBody,
  ApiConsumes,
  ApiOkResponse,
  ApiOperation,
  ApiParam,
  ApiQuery,
  ApiResponse,
  ApiTags,
  ApiUnsupportedMediaTypeResponse,
} from '@nestjs/swagger';
import type { FhirVersion } from '@app/fhir';
import {
  FhirIdParam,
  FhirOperation,
  FhirRoute,
  FhirSearchParams,
  FhirTypeParam,
  FhirVersionParam,
} from '../../../fhir-http';
import type { SearchPairs } from '../../../fhir-http/search-pairs';
import { Tenant } from '../../../tenancy/use-tenant.decorator';
import type { TenantContext } from '../../../tenancy/tenant-context';
import { EverythingService } from './everything.service';
import { SearchService } from './search.service';

const VERSION = { name: 'version', description: 'FHIR version: r4, stu3 or dstu2 (any case)', example: 'r4' };
export const TYPE = { name: 'type', description: 'FHIR resource type', example: 'Observation' };
export const PATIENT_ID = { name: 'id', description: 'logical id of the Patient', example: 'example' };
const BAD_SEARCH = {
  status: 400,
  description: 'bad parameter value, unknown modifier, too deep `_skip`: OperationOutcome',
};
export const SEARCHSET = {
  description:
    'searchset Bundle: total, paging links (self/first/previous/next/last), entries with search.mode',
};

/** A search route: FHIR route checks (404/406/415 before credentials), then the tenant. */
export function SearchRoute(options: { kind?: 'read' } = {}): MethodDecorator {
  return applyDecorators(
    FhirRoute({ ...options, body: 'form', lane: 'read' }),
    ApiParam(VERSION),
    ApiResponse(BAD_SEARCH),
  );
}

/** `Patient/$everything` (https://hl7.org/fhir/R4/patient-operation-everything.html). */
const EVERYTHING = {
  name: 'everything',
  // type level: every Patient of the caller; GET and POST (HAPI's and fhir-kit-client's default)
  levels: ['type', 'instance'],
  types: ['Patient'],
  definition: 'http://hl7.org/fhir/OperationDefinition/Patient-everything',
  description: 'the patient, its compartment and what they reference, by type, paged',
} as const;

const COMMON_QUERY = [
  { name: '_count', required: false, description: 'page size (default 10, at most 100)' },
  { name: '_skip', required: false, description: 'offset of the page (up to SEARCH_MAX_SKIP)' },
  { name: '_sort', required: false, description: 'keys, `-` for descending (default -_lastUpdated,_id)' },
  {
    name: '_total',
    required: false,
    description:
      'none; estimate (default): exact up to SEARCH_TOTAL_EXACT_UP_TO matches, else left out; accurate',
  },
  { name: '_summary', required: false, description: 'count: total only; data, text: subsets' },
  { name: '_elements', required: false, description: 'top-level elements to keep (meta.tag SUBSETTED)' },
  {
    name: '_content',
    required: false,
    description: 'words of the resource text (last word as a prefix); only with FHIR_FULLTEXT=on, else 400',
  },
];

export function SearchQueryDocs(): MethodDecorator {
  return applyDecorators(...COMMON_QUERY.map((query) => ApiQuery(query)));
}

/** FHIR search (https://hl7.org/fhir/R4/search.html) and `Patient/$everything`. */
@ApiTags('FHIR search')
@Controller()
export class SearchController {
  constructor(
    private readonly searches: SearchService,
    private readonly everythings: EverythingService,
  ) {}

  @FhirOperation(EVERYTHING)
  @ApiParam(PATIENT_ID)
  @ApiQuery({ name: '_type', required: false, description: 'only these resource types (comma-separated)' })
  @ApiQuery({ name: '_since', required: false, description: 'only resources updated since this instant' })
  @ApiQuery({ name: 'start', required: false, description: 'care dates from (resources without dates stay)' })
  @ApiQuery({ name: 'end', required: false, description: 'care dates until' })
  @ApiQuery({ name: '_count', required: false, description: 'page size (default 10, at most 100)' })
  @ApiOkResponse(SEARCHSET)
  @ApiResponse({ status: 404, description: 'no such Patient in the caller scope (OperationOutcome)' })
  everything(
    @Tenant() ctx: TenantContext,
    @FhirVersionParam() version: FhirVersion,
    @FhirIdParam('optional') id: string | undefined,
    @FhirSearchParams() params: SearchPairs,
  ) {
    return this.everythings.everything(ctx, version, id, params);
  }

  @Delete(':version/Patient/:id/$everything')
  @SearchRoute()
  @ApiParam(PATIENT_ID)
  @ApiOperation({
    summary: 'remove the patient and every resource of its compartment for good (docs/api.md §7)',
  })
  @ApiOkResponse({ description: 'OperationOutcome with the number of resources removed per type' })
  @ApiResponse({ status: 404, description: 'no such Patient for this user (OperationOutcome)' })
  deleteEverything(
    @Tenant() ctx: TenantContext,
    @FhirVersionParam() version: FhirVersion,
    @FhirIdParam() id: string,
  ) {
    return this.everythings.removeEverything(ctx, version, id);
  }

  @Get(':version')
  @SearchRoute()
  @ApiOperation({ summary: 'system search across types (`_type=A,B` and the parameters they share)' })
  @ApiQuery({ name: '_type', required: false, description: 'resource types to search (comma-separated)' })
  @SearchQueryDocs()
  @ApiOkResponse(SEARCHSET)
  searchSystem(
    @Tenant() ctx: TenantContext,
    @FhirVersionParam() version: FhirVersion,
    @FhirSearchParams() params: SearchPairs,
    @Headers('prefer') prefer: string | undefined,
  ) {
    return this.searches.search(ctx, version, undefined, params, prefer);
  }

  @Get(':version/:type')
  @SearchRoute()
  @ApiParam(TYPE)
  @ApiOperation({
    summary:
      'search: every base search parameter of the type, modifiers, prefixes, chains, _has, _include/_revinclude',
  })
  @SearchQueryDocs()
  @ApiOkResponse(SEARCHSET)
  searchType(
    @Tenant() ctx: TenantContext,
    @FhirVersionParam() version: FhirVersion,
    @FhirTypeParam() type: string,
    @FhirSearchParams() params: SearchPairs,
    @Headers('prefer') prefer: string | undefined,
  ) {
    return this.searches.search(ctx, version, type, params, prefer);
  }

  @Post(':version/:type/_search')
  @SearchRoute({ kind: 'read' })
  @ApiParam(TYPE)
  @ApiOperation({ summary: 'search with the parameters in a form body (merged after the query string)' })
  @ApiConsumes('application/x-www-form-urlencoded')
  @ApiBody({
    description: 'search parameters as a form',
    schema: { type: 'object', additionalProperties: { type: 'string' } },
  })
  @ApiOkResponse(SEARCHSET)
  @ApiUnsupportedMediaTypeResponse({ description: 'the body is not application/x-www-form-urlencoded' })
  searchPost(
    @Tenant() ctx: TenantContext,
    @FhirVersionParam() version: FhirVersion,
    @FhirTypeParam() type: string,
    @FhirSearchParams() params: SearchPairs,
    @Headers('prefer') prefer: string | undefined,
  ) {
    return this.searches.search(ctx, version, type, params, prefer);
  }
}
