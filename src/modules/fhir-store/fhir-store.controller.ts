import {
  Body,
  Controller,
  Delete,
  Get,
  Headers,
  Param,
  Patch,
  Post,
  Put,
  Req,
  Res,
  UseGuards,
} from '@nestjs/common';
import {
  ApiBody,
  ApiConflictResponse,
  ApiGoneResponse,
  ApiHeader,
  ApiNotAcceptableResponse,
  ApiOkResponse,
  ApiOperation,
  ApiParam,
  ApiPreconditionFailedResponse,
  ApiResponse,
  ApiTags,
  ApiUnsupportedMediaTypeResponse,
} from '@nestjs/swagger';
import type { Request, Response } from 'express';
import { Tenant, UseTenant, type TenantContext } from '../../tenancy';
import { BundleService } from './bundle.service';
import { ConditionalService } from './conditional.service';
import { queryPairs } from './search/search-request';
import { resourceBody, sendReply, versionParam } from './fhir-reply';
import { FhirRouteGuard } from './fhir-route.guard';
import { FhirStoreService } from './fhir-store.service';
import { patchDocument, PatchService } from './patch.service';

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
 * FHIR REST interactions of SPEC §4.4–4.6 (https://hl7.org/fhir/R4/http.html). Registered last
 * (src/modules/feature-modules.ts): its generic paths must not shadow specific ones.
 */
@ApiTags('FHIR')
@UseTenant()
@UseGuards(FhirRouteGuard)
@ApiParam(VERSION)
@ApiNotAcceptableResponse({ description: 'XML or another non-JSON format asked for (OperationOutcome)' })
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
    summary: 'transaction or batch Bundle of at most 20 entries, each stored independently (SPEC §4.4)',
  })
  @ApiBody({ description: 'a Bundle of type transaction or batch', schema: { type: 'object' } })
  @ApiOkResponse({ description: 'transaction-response / batch-response Bundle, one entry per request entry' })
  @ApiUnsupportedMediaTypeResponse({ description: 'body is not JSON' })
  async transaction(
    @Tenant() ctx: TenantContext,
    @Param('version') version: string,
    @Body() body: unknown,
    @Req() req: Request,
    @Res() res: Response,
  ): Promise<void> {
    sendReply(
      req,
      res,
      await this.bundles.process(ctx, versionParam(version), resourceBody(body), req.get('prefer')),
    );
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
  async create(
    @Tenant() ctx: TenantContext,
    @Param('version') version: string,
    @Param('type') type: string,
    @Body() body: unknown,
    @Headers('if-none-exist') ifNoneExist: string | undefined,
    @Headers('prefer') prefer: string | undefined,
    @Req() req: Request,
    @Res() res: Response,
  ): Promise<void> {
    const v = versionParam(version);
    const resource = resourceBody(body);
    sendReply(
      req,
      res,
      ifNoneExist === undefined
        ? await this.store.create(ctx, v, type, resource, prefer)
        : await this.conditional.create(ctx, v, type, resource, ifNoneExist, prefer),
    );
  }

  @Put(':version/:type')
  @ApiOperation({ summary: 'conditional update: the one resource matching the query (0 → create, 2+ → 412)' })
  @ApiParam(TYPE)
  @ApiBody(RESOURCE_BODY)
  @ApiHeader(PREFER)
  @ApiOkResponse({ description: 'the new version of the matching resource' })
  @ApiResponse({ status: 201, description: 'no match: created' })
  @ApiPreconditionFailedResponse({ description: 'several resources match, or If-Match differs' })
  async conditionalUpdate(
    @Tenant() ctx: TenantContext,
    @Param('version') version: string,
    @Param('type') type: string,
    @Body() body: unknown,
    @Headers('if-match') ifMatch: string | undefined,
    @Headers('prefer') prefer: string | undefined,
    @Req() req: Request,
    @Res() res: Response,
  ): Promise<void> {
    const v = versionParam(version);
    const reply = await this.conditional.update(
      ctx,
      v,
      type,
      queryPairs(req),
      resourceBody(body),
      ifMatch,
      prefer,
    );
    sendReply(req, res, reply);
  }

  @Delete(':version/:type')
  @ApiOperation({ summary: 'conditional delete: the one resource matching the query (0 → 404, 2+ → 412)' })
  @ApiParam(TYPE)
  @ApiOkResponse({ description: 'OperationOutcome naming id and version' })
  @ApiPreconditionFailedResponse({ description: 'several resources match' })
  async conditionalDelete(
    @Tenant() ctx: TenantContext,
    @Param('version') version: string,
    @Param('type') type: string,
    @Headers('prefer') prefer: string | undefined,
    @Req() req: Request,
    @Res() res: Response,
  ): Promise<void> {
    sendReply(
      req,
      res,
      await this.conditional.delete(ctx, versionParam(version), type, queryPairs(req), prefer),
    );
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
  async conditionalPatch(
    @Tenant() ctx: TenantContext,
    @Param('version') version: string,
    @Param('type') type: string,
    @Body() body: unknown,
    @Headers('if-match') ifMatch: string | undefined,
    @Headers('prefer') prefer: string | undefined,
    @Req() req: Request,
    @Res() res: Response,
  ): Promise<void> {
    const v = versionParam(version);
    const document = patchDocument(req.get('content-type'), body);
    sendReply(
      req,
      res,
      await this.conditional.patch(ctx, v, type, queryPairs(req), document, ifMatch, prefer),
    );
  }

  @Get(':version/:type/:id')
  @ApiOperation({ summary: 'read the current version' })
  @ApiParam(TYPE)
  @ApiParam(ID)
  @ApiOkResponse({ description: 'the resource, with ETag and Last-Modified' })
  @ApiGoneResponse({ description: 'deleted: OperationOutcome' })
  async read(
    @Tenant() ctx: TenantContext,
    @Param('version') version: string,
    @Param('type') type: string,
    @Param('id') id: string,
    @Req() req: Request,
    @Res() res: Response,
  ): Promise<void> {
    sendReply(req, res, await this.store.read(ctx, versionParam(version), type, id));
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
  async update(
    @Tenant() ctx: TenantContext,
    @Param('version') version: string,
    @Param('type') type: string,
    @Param('id') id: string,
    @Body() body: unknown,
    @Headers('if-match') ifMatch: string | undefined,
    @Headers('prefer') prefer: string | undefined,
    @Req() req: Request,
    @Res() res: Response,
  ): Promise<void> {
    sendReply(
      req,
      res,
      await this.store.update(ctx, versionParam(version), type, id, resourceBody(body), ifMatch, prefer),
    );
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
  async patch(
    @Tenant() ctx: TenantContext,
    @Param('version') version: string,
    @Param('type') type: string,
    @Param('id') id: string,
    @Body() body: unknown,
    @Headers('if-match') ifMatch: string | undefined,
    @Headers('prefer') prefer: string | undefined,
    @Req() req: Request,
    @Res() res: Response,
  ): Promise<void> {
    const document = patchDocument(req.get('content-type'), body);
    sendReply(
      req,
      res,
      await this.patches.patch(ctx, versionParam(version), type, id, document, ifMatch, prefer),
    );
  }

  @Delete(':version/:type/:id')
  @ApiOperation({ summary: 'delete: adds a deleted version; history stays (SPEC §3.1)' })
  @ApiParam(TYPE)
  @ApiParam(ID)
  @ApiOkResponse({ description: 'OperationOutcome (information, value) naming id and version' })
  async delete(
    @Tenant() ctx: TenantContext,
    @Param('version') version: string,
    @Param('type') type: string,
    @Param('id') id: string,
    @Req() req: Request,
    @Res() res: Response,
  ): Promise<void> {
    sendReply(req, res, await this.store.delete(ctx, versionParam(version), type, id));
  }

  @Get(':version/:type/:id/_history/:vid')
  @ApiOperation({ summary: 'versioned read (also after the resource was deleted)' })
  @ApiParam(TYPE)
  @ApiParam(ID)
  @ApiParam(VID)
  @ApiOkResponse({ description: 'that version' })
  @ApiGoneResponse({ description: 'that version is a delete marker' })
  async vread(
    @Tenant() ctx: TenantContext,
    @Param('version') version: string,
    @Param('type') type: string,
    @Param('id') id: string,
    @Param('vid') vid: string,
    @Req() req: Request,
    @Res() res: Response,
  ): Promise<void> {
    sendReply(req, res, await this.store.vread(ctx, versionParam(version), type, id, vid));
  }

  @Delete(':version/:type/:id/_history/:vid')
  @ApiOperation({ summary: 'delete one version; when none is left the resource reads 404 for good' })
  @ApiParam(TYPE)
  @ApiParam(ID)
  @ApiParam(VID)
  @ApiOkResponse({ description: 'OperationOutcome naming id and version' })
  @ApiConflictResponse({ description: 'the version is the current one of a resource not deleted' })
  async deleteVersion(
    @Tenant() ctx: TenantContext,
    @Param('version') version: string,
    @Param('type') type: string,
    @Param('id') id: string,
    @Param('vid') vid: string,
    @Req() req: Request,
    @Res() res: Response,
  ): Promise<void> {
    sendReply(req, res, await this.store.deleteVersion(ctx, versionParam(version), type, id, vid));
  }
}
