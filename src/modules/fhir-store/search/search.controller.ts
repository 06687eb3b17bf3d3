import {
  applyDecorators,
  Body,
  Controller,
  Delete,
  Get,
  Headers,
  Param,
  Post,
  Req,
  Res,
  UseGuards,
} from '@nestjs/common';
import {
  ApiBody,
  ApiConsumes,
  ApiNotAcceptableResponse,
  ApiOkResponse,
  ApiOperation,
  ApiParam,
  ApiQuery,
  ApiResponse,
  ApiTags,
  ApiUnsupportedMediaTypeResponse,
} from '@nestjs/swagger';
import type { Request, Response } from 'express';
import { Tenant, UseTenant, type TenantContext } from '../../../tenancy';
import { sendReply, versionParam } from '../fhir-reply';
import { EverythingService } from './everything.service';
import { formPairs, operationPairs, queryPairs } from './search-request';
import { SearchRouteGuard, TakesParameters } from './search-route.guard';
import { SearchService } from './search.service';

const VERSION = { name: 'version', description: 'FHIR version: r4, stu3 or dstu2 (any case)', example: 'r4' };
const TYPE = { name: 'type', description: 'FHIR resource type', example: 'Observation' };
const PATIENT_ID = { name: 'id', description: 'logical id of the Patient', example: 'example' };
const BAD_SEARCH = {
  status: 400,
  description: 'bad parameter value, unknown modifier, too deep `_skip`: OperationOutcome',
};
const SEARCHSET = {
  description:
    'searchset Bundle: total, paging links (self/first/previous/next/last), entries with search.mode',
};

/** Route checks first (404/406/415 before credentials), then the tenant (SPEC §4.3). */
function SearchRoute(options: { readRoute?: boolean } = {}): MethodDecorator {
  return applyDecorators(UseGuards(SearchRouteGuard), UseTenant(options), ApiParam(VERSION), BadSearch());
}

function BadSearch(): MethodDecorator {
  return applyDecorators(
    ApiResponse(BAD_SEARCH),
    ApiNotAcceptableResponse({ description: 'XML or another non-JSON format asked for (OperationOutcome)' }),
  );
}

const COMMON_QUERY = [
  { name: '_count', required: false, description: 'page size (default 10, at most 100)' },
  { name: '_skip', required: false, description: 'offset of the page (up to SEARCH_MAX_SKIP)' },
  { name: '_sort', required: false, description: 'keys, `-` for descending (default -_lastUpdated,_id)' },
  { name: '_total', required: false, description: 'accurate (default) or none' },
  { name: '_summary', required: false, description: 'count: total only; data, text: subsets' },
  { name: '_elements', required: false, description: 'top-level elements to keep (meta.tag SUBSETTED)' },
  { name: '_content', required: false, description: 'words of the resource text (last word as a prefix)' },
];

function SearchQueryDocs(): MethodDecorator {
  return applyDecorators(...COMMON_QUERY.map((query) => ApiQuery(query)));
}

/** The parameters of `Patient/$everything` (https://hl7.org/fhir/R4/patient-operation-everything.html). */
function EverythingDocs(summary: string): MethodDecorator {
  return applyDecorators(
    ApiOperation({ summary }),
    ApiQuery({ name: '_type', required: false, description: 'only these resource types (comma-separated)' }),
    ApiQuery({ name: '_since', required: false, description: 'only resources updated since this instant' }),
    ApiQuery({
      name: 'start',
      required: false,
      description: 'care dates from (resources without dates stay)',
    }),
    ApiQuery({ name: 'end', required: false, description: 'care dates until' }),
    ApiQuery({ name: '_count', required: false, description: 'page size (default 10, at most 100)' }),
    ApiOkResponse(SEARCHSET),
  );
}

/**
 * FHIR search (issue 5, SPEC §4.5). Registered before the store's controller (its module comes
 * first in feature-modules.ts) so that `/{v}/Patient/{id}/$everything` wins over `/{v}/{type}/{id}/…`.
 */
@ApiTags('FHIR search')
@Controller()
export class SearchController {
  constructor(
    private readonly searches: SearchService,
    private readonly everything: EverythingService,
  ) {}

  @Get(':version/Patient/$everything')
  @SearchRoute()
  @EverythingDocs(
    'Patient/$everything over every Patient of the caller: the patients, their compartments and what they reference, paged',
  )
  async getAllEverything(
    @Tenant() ctx: TenantContext,
    @Param('version') version: string,
    @Req() req: Request,
    @Res() res: Response,
  ): Promise<void> {
    sendReply(
      req,
      res,
      await this.everything.everything(ctx, versionParam(version), undefined, queryPairs(req)),
    );
  }

  @Post(':version/Patient/$everything')
  @SearchRoute({ readRoute: true })
  @TakesParameters()
  @EverythingDocs('Patient/$everything over every Patient of the caller, invoked with POST (Parameters body)')
  async postAllEverything(
    @Tenant() ctx: TenantContext,
    @Param('version') version: string,
    @Body() body: unknown,
    @Req() req: Request,
    @Res() res: Response,
  ): Promise<void> {
    const pairs = [...queryPairs(req), ...operationPairs(body)];
    sendReply(req, res, await this.everything.everything(ctx, versionParam(version), undefined, pairs));
  }

  @Get(':version/Patient/:id/$everything')
  @SearchRoute()
  @ApiParam(PATIENT_ID)
  @EverythingDocs('Patient/$everything: the patient, its compartment and what they reference, by type, paged')
  @ApiResponse({ status: 404, description: 'no such Patient in the caller scope (OperationOutcome)' })
  async getEverything(
    @Tenant() ctx: TenantContext,
    @Param('version') version: string,
    @Param('id') id: string,
    @Req() req: Request,
    @Res() res: Response,
  ): Promise<void> {
    sendReply(req, res, await this.everything.everything(ctx, versionParam(version), id, queryPairs(req)));
  }

  @Post(':version/Patient/:id/$everything')
  @SearchRoute({ readRoute: true })
  @TakesParameters()
  @ApiParam(PATIENT_ID)
  @EverythingDocs(
    'Patient/$everything invoked with POST (the default of HAPI and fhir-kit-client): a Parameters body',
  )
  @ApiResponse({ status: 404, description: 'no such Patient in the caller scope (OperationOutcome)' })
  async postEverything(
    @Tenant() ctx: TenantContext,
    @Param('version') version: string,
    @Param('id') id: string,
    @Body() body: unknown,
    @Req() req: Request,
    @Res() res: Response,
  ): Promise<void> {
    const pairs = [...queryPairs(req), ...operationPairs(body)];
    sendReply(req, res, await this.everything.everything(ctx, versionParam(version), id, pairs));
  }

  @Delete(':version/Patient/:id/$everything')
  @SearchRoute()
  @ApiParam(PATIENT_ID)
  @ApiOperation({
    summary: 'remove the patient and every resource of its compartment for good (SPEC §3.1, §4.6)',
  })
  @ApiOkResponse({ description: 'OperationOutcome with the number of resources removed per type' })
  @ApiResponse({ status: 404, description: 'no such Patient for this user (OperationOutcome)' })
  async deleteEverything(
    @Tenant() ctx: TenantContext,
    @Param('version') version: string,
    @Param('id') id: string,
    @Req() req: Request,
    @Res() res: Response,
  ): Promise<void> {
    sendReply(req, res, await this.everything.removeEverything(ctx, versionParam(version), id));
  }

  @Get(':version/:compartment/:id/:type')
  @SearchRoute()
  @ApiParam({
    name: 'compartment',
    description: 'the compartment type: only Patient is served',
    example: 'Patient',
  })
  @ApiParam(PATIENT_ID)
  @ApiParam(TYPE)
  @ApiOperation({
    summary: 'compartment search: the type-level search restricted to the Patient compartment',
  })
  @SearchQueryDocs()
  @ApiOkResponse(SEARCHSET)
  @ApiResponse({ status: 404, description: 'no such Patient in the caller scope (OperationOutcome)' })
  async searchCompartment(
    @Tenant() ctx: TenantContext,
    @Param('version') version: string,
    @Param('compartment') compartment: string,
    @Param('id') id: string,
    @Param('type') type: string,
    @Headers('prefer') prefer: string | undefined,
    @Req() req: Request,
    @Res() res: Response,
  ): Promise<void> {
    const v = versionParam(version);
    sendReply(
      req,
      res,
      await this.searches.compartmentSearch(ctx, v, compartment, id, type, queryPairs(req), prefer),
    );
  }

  @Get(':version')
  @SearchRoute()
  @ApiOperation({ summary: 'system search across types (`_type=A,B` and the parameters they share)' })
  @ApiQuery({ name: '_type', required: false, description: 'resource types to search (comma-separated)' })
  @SearchQueryDocs()
  @ApiOkResponse(SEARCHSET)
  async searchSystem(
    @Tenant() ctx: TenantContext,
    @Param('version') version: string,
    @Headers('prefer') prefer: string | undefined,
    @Req() req: Request,
    @Res() res: Response,
  ): Promise<void> {
    sendReply(
      req,
      res,
      await this.searches.search(ctx, versionParam(version), undefined, queryPairs(req), prefer),
    );
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
  async searchType(
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
      await this.searches.search(ctx, versionParam(version), type, queryPairs(req), prefer),
    );
  }

  @Post(':version/:type/_search')
  @SearchRoute({ readRoute: true })
  @ApiParam(TYPE)
  @ApiOperation({ summary: 'search with the parameters in a form body (merged after the query string)' })
  @ApiConsumes('application/x-www-form-urlencoded')
  @ApiBody({
    description: 'search parameters as a form',
    schema: { type: 'object', additionalProperties: { type: 'string' } },
  })
  @ApiOkResponse(SEARCHSET)
  @ApiUnsupportedMediaTypeResponse({ description: 'the body is not application/x-www-form-urlencoded' })
  async searchPost(
    @Tenant() ctx: TenantContext,
    @Param('version') version: string,
    @Param('type') type: string,
    @Headers('prefer') prefer: string | undefined,
    @Body() body: unknown,
    @Req() req: Request,
    @Res() res: Response,
  ): Promise<void> {
    const pairs = [...queryPairs(req), ...formPairs(body)];
    sendReply(req, res, await this.searches.search(ctx, versionParam(version), type, pairs, prefer));
  }
}
