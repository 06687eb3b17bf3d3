import { Controller, Delete, Get, Headers, Param, Patch, Post, Put } from '@nestjs/common';
import {
  ApiBody,
  ApiConflictResponse,
  ApiGoneResponse,
  ApiHeader,
  ApiOkResponse,
  ApiOperation,
  ApiParam,
  ApiPreconditionFailedResponse,
  ApiResponse,
  ApiTags,
  ApiUnsupportedMediaTypeResponse,
} from '@nestjs/swagger';
import type { FhirVersion } from '@app/fhir';
import {
  FhirInstanceParam,
  FhirPatchBody,
  FhirResourceBody,
  FhirRoute,
  FhirSearchParams,
  FhirTypeParam,
  FhirVersionParam,
  type FhirInstance,
  type PatchDocument,
} from '../../fhir-http';
import type { SearchPairs } from '../../fhir-http/search-pairs';
import { Tenant } from '../../tenancy/use-tenant.decorator';
import type { TenantContext } from '../../tenancy/tenant-context';
import { BundleService } from './bundle.service';
import { ConditionalService } from './conditional.service';
import { FhirStoreService } from './fhir-store.service';
import { PatchService } from './patch.service';

const VERSION = { name: 'version', description: 'FHIR version: r4, stu3 or dstu2 (any case)', example: 'r4' };
const TYPE = { name: 'type', description: 'FHIR resource type', example: 'Patient' };
const ID = { name: 'id', description: 'logical id', example: 'example' };
const VID = { name: 'vid', description: 'versionId', example: '1' };
const PREFER = {
  name: 'Prefer',
  required: false,
  description: 'return=minimal | representation (default) | OperationOutcome; handling=strict | lenient',
};
const IF_NONE_EXIST = {
  name: 'If-None-Exist',
  required: false,
  description:
    'conditional create: search parameters (e.g. identifier=sys|1); a match is answered, not duplicated',
};
const RESOURCE_BODY = {
  description: 'a FHIR resource (application/fhir+json or application/json)',
  schema: { type: 'object' },
};

/**
 * FHIR REST interactions (https://hl7.org/fhir/R4/http.html). Its generic paths come after every
 * specific FHIR path (`FHIR_CONTROLLERS` in src/modules/fhir-routes.module.ts).
 */
@ApiTags('FHIR')
@ApiParam(VERSION)
@Controller()
export class FhirStoreController {
  constructor(
    private readonly store: FhirStoreService,
    private readonly bundles: BundleService,
    private readonly conditional: ConditionalService,
    private readonly patches: PatchService,
  ) {}

  @Post(':version')
  @ApiOperation({
    summary: 'transaction or batch Bundle of at most 20 entries, each stored independently (docs/api.md §5)',
  })
  @ApiBody({ description: 'a Bundle of type transaction or batch', schema: { type: 'object' } })
  @ApiOkResponse({ description: 'transaction-response / batch-response Bundle, one entry per request entry' })
  @ApiUnsupportedMediaTypeResponse({ description: 'body is not JSON' })
  @FhirRoute({ body: 'resource' })
  transaction(
    @Tenant() ctx: TenantContext,
    @FhirVersionParam() version: FhirVersion,
    @FhirResourceBody() bundle: Record<string, unknown>,
    @Headers('prefer') prefer: string | undefined,
  ) {
    return this.bundles.process(ctx, version, bundle, prefer);
  }

  @Post(':version/:type')
  @ApiOperation({
    summary:
      'create a resource (client-supplied id: a new version of your own resource); stores a Provenance',
  })
  @ApiParam(TYPE)
  @ApiBody(RESOURCE_BODY)
  @ApiResponse({ status: 201, description: 'the stored resource, with Location and ETag' })
  @ApiResponse({ status: 400, description: 'invalid resource: OperationOutcome with every issue' })
  @ApiConflictResponse({ description: 'the id belongs to another user of the client' })
  @ApiUnsupportedMediaTypeResponse({ description: 'body is not JSON' })
  @ApiHeader(IF_NONE_EXIST)
  @ApiHeader(PREFER)
  @FhirRoute({ body: 'resource' })
  create(
    @Tenant() ctx: TenantContext,
    @FhirVersionParam() version: FhirVersion,
    @FhirTypeParam() type: string,
    @FhirResourceBody() resource: Record<string, unknown>,
    @Headers('if-none-exist') ifNoneExist: string | undefined,
    @Headers('prefer') prefer: string | undefined,
  ) {
    return ifNoneExist === undefined
      ? this.store.create(ctx, version, type, resource)
      : this.conditional.create(ctx, version, type, resource, ifNoneExist, prefer);
  }

  @Put(':version/:type')
  @ApiOperation({ summary: 'conditional update: the one resource matching the query (0 → create, 2+ → 412)' })
  @ApiParam(TYPE)
  @ApiBody(RESOURCE_BODY)
  @ApiHeader(PREFER)
  @ApiOkResponse({ description: 'the new version of the matching resource' })
  @ApiResponse({ status: 201, description: 'no match: created' })
  @ApiPreconditionFailedResponse({ description: 'several resources match, or If-Match differs' })
  @FhirRoute({ body: 'resource' })
  conditionalUpdate(
    @Tenant() ctx: TenantContext,
    @FhirVersionParam() version: FhirVersion,
    @FhirTypeParam() type: string,
    @FhirSearchParams() query: SearchPairs,
    @FhirResourceBody() resource: Record<string, unknown>,
    @Headers('if-match') ifMatch: string | undefined,
    @Headers('prefer') prefer: string | undefined,
  ) {
    return this.conditional.update(ctx, version, type, query, resource, ifMatch, prefer);
  }

  @Delete(':version/:type')
  @ApiOperation({ summary: 'conditional delete: the one resource matching the query (0 → 404, 2+ → 412)' })
  @ApiParam(TYPE)
  @ApiOkResponse({ description: 'OperationOutcome naming id and version' })
  @ApiPreconditionFailedResponse({ description: 'several resources match' })
  @FhirRoute()
  conditionalDelete(
    @Tenant() ctx: TenantContext,
    @FhirVersionParam() version: FhirVersion,
    @FhirTypeParam() type: string,
    @FhirSearchParams() query: SearchPairs,
    @Headers('prefer') prefer: string | undefined,
  ) {
    return this.conditional.delete(ctx, version, type, query, prefer);
  }

  @Patch(':version/:type')
  @ApiOperation({
    summary: 'conditional patch (R4, STU3): the one resource matching the query (0 → 404, 2+ → 412)',
  })
  @ApiParam(TYPE)
  @ApiBody({ description: 'JSON Patch operations, or a Parameters resource', schema: { type: 'object' } })
  @ApiHeader(PREFER)
  @ApiOkResponse({ description: 'the new version of the matching resource' })
  @ApiPreconditionFailedResponse({ description: 'several resources match, or If-Match differs' })
  @ApiResponse({ status: 422, description: 'the patched resource is not valid: nothing stored' })
  @FhirRoute()
  conditionalPatch(
    @Tenant() ctx: TenantContext,
    @FhirVersionParam() version: FhirVersion,
    @FhirTypeParam() type: string,
    @FhirSearchParams() query: SearchPairs,
    @FhirPatchBody() document: PatchDocument,
    @Headers('if-match') ifMatch: string | undefined,
    @Headers('prefer') prefer: string | undefined,
  ) {
    return this.conditional.patch(ctx, version, type, query, document, ifMatch, prefer);
  }

  @Get(':version/:type/:id')
  @ApiOperation({ summary: 'read the current version' })
  @ApiParam(TYPE)
  @ApiParam(ID)
  @ApiOkResponse({ description: 'the resource, with ETag and Last-Modified' })
  @ApiGoneResponse({ description: 'deleted: OperationOutcome' })
  @FhirRoute({ shape: true })
  read(@FhirInstanceParam() { ctx, version, type, id }: FhirInstance) {
    return this.store.read(ctx, version, type, id);
  }

  @Put(':version/:type/:id')
  @ApiOperation({ summary: 'update, or create with this id; If-Match: W/"n" for optimistic locking' })
  @ApiHeader(PREFER)
  @ApiParam(TYPE)
  @ApiParam(ID)
  @ApiBody(RESOURCE_BODY)
  @ApiOkResponse({ description: 'the new version' })
  @ApiResponse({ status: 201, description: 'created with this id' })
  @ApiPreconditionFailedResponse({ description: 'If-Match does not name the current version' })
  @ApiConflictResponse({ description: 'the id belongs to another user of the client' })
  @FhirRoute({ body: 'resource' })
  update(
    @FhirInstanceParam() { ctx, version, type, id }: FhirInstance,
    @FhirResourceBody() resource: Record<string, unknown>,
    @Headers('if-match') ifMatch: string | undefined,
  ) {
    return this.store.update(ctx, version, type, id, resource, ifMatch);
  }

  @Patch(':version/:type/:id')
  @ApiOperation({
    summary: 'patch (R4, STU3): JSON Patch (application/json-patch+json) or FHIRPath Patch (Parameters)',
  })
  @ApiParam(TYPE)
  @ApiParam(ID)
  @ApiBody({ description: 'JSON Patch operations, or a Parameters resource', schema: { type: 'object' } })
  @ApiHeader(PREFER)
  @ApiOkResponse({ description: 'the new version' })
  @ApiPreconditionFailedResponse({ description: 'If-Match does not name the current version' })
  @ApiResponse({ status: 422, description: 'the patched resource is not valid: nothing stored' })
  @FhirRoute()
  patch(
    @FhirInstanceParam() { ctx, version, type, id }: FhirInstance,
    @FhirPatchBody() document: PatchDocument,
    @Headers('if-match') ifMatch: string | undefined,
  ) {
    return this.patches.patch(ctx, version, type, id, document, ifMatch);
  }

  @Delete(':version/:type/:id')
  @ApiOperation({ summary: 'delete: adds a deleted version; history stays (docs/api.md §7)' })
  @ApiParam(TYPE)
  @ApiParam(ID)
  @ApiOkResponse({ description: 'OperationOutcome (information, value) naming id and version' })
  @FhirRoute()
  delete(@FhirInstanceParam() { ctx, version, type, id }: FhirInstance) {
    return this.store.delete(ctx, version, type, id);
  }

  @Get(':version/:type/:id/_history/:vid')
  @ApiOperation({ summary: 'versioned read (also after the resource was deleted)' })
  @ApiParam(TYPE)
  @ApiParam(ID)
  @ApiParam(VID)
  @ApiOkResponse({ description: 'that version' })
  @ApiGoneResponse({ description: 'that version is a delete marker' })
  @FhirRoute({ shape: true })
  vread(@FhirInstanceParam() { ctx, version, type, id }: FhirInstance, @Param('vid') vid: string) {
    return this.store.vread(ctx, version, type, id, vid);
  }

  @Delete(':version/:type/:id/_history/:vid')
  @ApiOperation({ summary: 'delete one version; when none is left the resource reads 404 for good' })
  @ApiParam(TYPE)
  @ApiParam(ID)
  @ApiParam(VID)
  @ApiOkResponse({ description: 'OperationOutcome naming id and version' })
  @ApiConflictResponse({ description: 'the version is the current one of a resource not deleted' })
  @FhirRoute()
  deleteVersion(@FhirInstanceParam() { ctx, version, type, id }: FhirInstance, @Param('vid') vid: string) {
    return this.store.deleteVersion(ctx, version, type, id, vid);
  }
}
