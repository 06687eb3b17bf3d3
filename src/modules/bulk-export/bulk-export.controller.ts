import { Controller, Delete, Get, HttpCode, Inject, Param, Post, Query, Req, Res } from '@nestjs/common';
import {
  ApiAcceptedResponse,
  ApiHeader,
  ApiOkResponse,
  ApiOperation,
  ApiParam,
  ApiProduces,
  ApiQuery,
  ApiTags,
} from '@nestjs/swagger';
import type { Request, Response } from 'express';
import { MetricsService } from '../../metrics/metrics.service';
import { Tenant, TenantContext, UseTenant } from '../../tenancy';
import { SETTINGS } from '../../config/config.module';
import type { Settings } from '../../config/settings';
import {
  BulkExportService,
  ExportManifest,
  ExportRoute,
  KickOffRequest,
  KickOffResult,
} from './bulk-export.service';
import { parametersToQuery, type RawQuery } from './export-parameters';
import { streamNdjson } from './ndjson-response';

type RouteParams = { version?: string; customer?: string; groupId?: string };

/** Which host a matched route belongs to; the gateway routes are R4 only (SPEC §9.5). */
function exportRoute(req: Request, params: RouteParams): ExportRoute {
  if (params.customer !== undefined) return { host: 'gateway', version: 'r4', customer: params.customer };
  return { host: req.path.startsWith('/bulk-data/') ? 'analytics' : 'base', version: params.version ?? '' };
}

function kickOffRequest(req: Request, params: RouteParams, kind: KickOffRequest['kind']): KickOffRequest {
  // POST kick-off: the Parameters body carries the parameters (export.html#post-body)
  const query = req.method === 'POST' ? parametersToQuery(req.body) : (req.query as RawQuery);
  return {
    ...exportRoute(req, params),
    kind,
    groupId: params.groupId,
    query,
    originalUrl: req.originalUrl,
    prefer: req.get('prefer'),
    userHeaders: req.get('x-service-user-id') !== undefined || req.get('x-app-user-id') !== undefined,
  };
}

/**
 * 200 with the manifest (SPEC §4.8), or 202 + Content-Location with `Prefer: respond-async` and an
 * OperationOutcome body as application/fhir+json (https://hl7.org/fhir/uv/bulkdata/export.html#response---success).
 */
function answerKickOff(res: Response, result: KickOffResult, linkTtlSeconds: number): unknown {
  if ('statusUrl' in result) {
    res.status(202).setHeader('Content-Location', result.statusUrl);
    res.setHeader('Content-Type', 'application/fhir+json; charset=utf-8');
    return {
      resourceType: 'OperationOutcome',
      issue: [
        {
          severity: 'information',
          code: 'informational',
          diagnostics: `export accepted: poll ${result.statusUrl}`,
        },
      ],
    };
  }
  return answerManifest(res, result.manifest, linkTtlSeconds);
}

/** The complete-status manifest: application/json (export.html#response---complete-status); Expires = when its links expire. */
function answerManifest(res: Response, manifest: ExportManifest, linkTtlSeconds: number): unknown {
  res.status(200).setHeader('Content-Type', 'application/json; charset=utf-8');
  res.setHeader('Expires', new Date(Date.now() + linkTtlSeconds * 1000).toUTCString());
  return manifest;
}

const EXPORT_QUERY = [
  ApiQuery({
    name: '_type',
    required: false,
    description: 'comma-separated resource types; an unknown one → 400',
  }),
  ApiQuery({
    name: '_since',
    required: false,
    description: 'YYYY-MM-DD or an instant; lastUpdated later than it',
  }),
  ApiQuery({
    name: '_outputFormat',
    required: false,
    description: 'application/fhir+ndjson (the only format)',
  }),
  ApiHeader({
    name: 'Prefer',
    required: false,
    description: '`respond-async` for the Bulk Data IG async flow',
  }),
  ApiOkResponse({
    description: 'the manifest: transactionTime, request, requiresAccessToken, output[{type,url,count}]',
  }),
  ApiAcceptedResponse({ description: 'async kick-off accepted; Content-Location = status URL' }),
];
function exportDocs(summary: string): MethodDecorator {
  return (target, key, descriptor) => {
    for (const d of [ApiOperation({ summary }), ...EXPORT_QUERY]) d(target, key, descriptor);
  };
}

/**
 * Bulk export (SPEC §4.8, issue 6; https://hl7.org/fhir/uv/bulkdata/export.html) on all its hosts:
 * `{analytics_url}/bulk-data/{v}`, `{gateway_url}/v1/{customer}/bulk-export/bulk-data/r4` and
 * `{base_url}/{v}`. Registered before the FHIR store, whose generic routes would swallow these.
 */
@ApiTags('Bulk export')
@Controller()
export class BulkExportController {
  constructor(
    private readonly exports: BulkExportService,
    private readonly metrics: MetricsService,
    @Inject(SETTINGS) private readonly settings: Settings,
  ) {}

  private get ttl(): number {
    return this.settings.exportLinkTtlSeconds;
  }

  @UseTenant({ readRoute: true })
  @Post(['bulk-data/:version/$export', ':version/$export', 'v1/:customer/bulk-export/bulk-data/r4/$export'])
  @exportDocs('System-level export kicked off with a Parameters body (_type, _since, _outputFormat)')
  async systemExportPost(
    @Tenant() ctx: TenantContext,
    @Param() params: RouteParams,
    @Req() req: Request,
    @Res() res: Response,
  ): Promise<void> {
    const body = answerKickOff(
      res,
      await this.exports.kickOff(ctx, kickOffRequest(req, params, 'system')),
      this.ttl,
    );
    res.send(JSON.stringify(body));
  }

  @UseTenant({ readRoute: true })
  @Post(['bulk-data/:version/Patient/$export', ':version/Patient/$export'])
  @exportDocs('Patient-level export kicked off with a Parameters body (_type, _since, patient …)')
  async patientExportPost(
    @Tenant() ctx: TenantContext,
    @Param() params: RouteParams,
    @Req() req: Request,
    @Res() res: Response,
  ): Promise<void> {
    const body = answerKickOff(
      res,
      await this.exports.kickOff(ctx, kickOffRequest(req, params, 'patient')),
      this.ttl,
    );
    res.send(JSON.stringify(body));
  }

  @UseTenant({ readRoute: true })
  @Post([
    'bulk-data/:version/Group/:groupId/$export',
    ':version/Group/:groupId/$export',
    'v1/:customer/bulk-export/bulk-data/r4/Group/:groupId/$export',
  ])
  @exportDocs('Group export kicked off with a Parameters body (_type, _since, patient …)')
  @ApiParam({ name: 'groupId', description: 'logical id of a Group of the tenant' })
  async groupExportPost(
    @Tenant() ctx: TenantContext,
    @Param() params: RouteParams,
    @Req() req: Request,
    @Res() res: Response,
  ): Promise<void> {
    const body = answerKickOff(
      res,
      await this.exports.kickOff(ctx, kickOffRequest(req, params, 'group')),
      this.ttl,
    );
    res.send(JSON.stringify(body));
  }

  @UseTenant()
  @Get(['bulk-data/:version/$export', ':version/$export', 'v1/:customer/bulk-export/bulk-data/r4/$export'])
  @exportDocs('System-level export: every resource of the tenant (the user, or every user of the client)')
  async systemExport(
    @Tenant() ctx: TenantContext,
    @Param() params: RouteParams,
    @Req() req: Request,
    @Res({ passthrough: true }) res: Response,
  ): Promise<unknown> {
    return answerKickOff(
      res,
      await this.exports.kickOff(ctx, kickOffRequest(req, params, 'system')),
      this.ttl,
    );
  }

  @UseTenant()
  @Get(['bulk-data/:version/Patient/$export', ':version/Patient/$export'])
  @exportDocs('Patient-level export: resources of the types in the Patient compartment')
  async patientExport(
    @Tenant() ctx: TenantContext,
    @Param() params: RouteParams,
    @Req() req: Request,
    @Res({ passthrough: true }) res: Response,
  ): Promise<unknown> {
    return answerKickOff(
      res,
      await this.exports.kickOff(ctx, kickOffRequest(req, params, 'patient')),
      this.ttl,
    );
  }

  @UseTenant()
  @Get([
    'bulk-data/:version/Group/:groupId/$export',
    ':version/Group/:groupId/$export',
    'v1/:customer/bulk-export/bulk-data/r4/Group/:groupId/$export',
  ])
  @exportDocs("Group export: the compartments of the Group's Patient members (at most 10,000)")
  @ApiParam({ name: 'groupId', description: 'logical id of a Group of the tenant' })
  async groupExport(
    @Tenant() ctx: TenantContext,
    @Param() params: RouteParams,
    @Req() req: Request,
    @Res({ passthrough: true }) res: Response,
  ): Promise<unknown> {
    return answerKickOff(
      res,
      await this.exports.kickOff(ctx, kickOffRequest(req, params, 'group')),
      this.ttl,
    );
  }

  @UseTenant()
  @Get([
    'bulk-data/:version/$export-status/:jobId',
    ':version/$export-status/:jobId',
    'v1/:customer/bulk-export/bulk-data/r4/$export-status/:jobId',
  ])
  @ApiOperation({
    summary: 'Async export status: 202 with X-Progress until ready, then 200 with the manifest',
  })
  @ApiOkResponse({ description: 'the manifest' })
  @ApiAcceptedResponse({ description: 'still in progress (X-Progress, Retry-After)' })
  async jobStatus(
    @Tenant() ctx: TenantContext,
    @Param() params: RouteParams & { jobId: string },
    @Req() req: Request,
    @Res({ passthrough: true }) res: Response,
  ): Promise<unknown> {
    const status = await this.exports.status(ctx, exportRoute(req, params), params.jobId);
    if ('manifest' in status) return answerManifest(res, status.manifest, this.settings.exportLinkTtlSeconds);
    res.status(202).setHeader('X-Progress', status.progress);
    res.setHeader('Retry-After', String(status.retryAfterSeconds));
    return undefined;
  }

  // Cancelling a job changes no FHIR data: allowed to read-only and client-wide credentials.
  @UseTenant({ readRoute: true })
  @Delete([
    'bulk-data/:version/$export-status/:jobId',
    ':version/$export-status/:jobId',
    'v1/:customer/bulk-export/bulk-data/r4/$export-status/:jobId',
  ])
  @HttpCode(202)
  @ApiOperation({ summary: 'Cancel an async export (later status requests → 404)' })
  @ApiAcceptedResponse({ description: 'cancelled' })
  async cancelJob(
    @Tenant() ctx: TenantContext,
    @Param() params: RouteParams & { jobId: string },
    @Req() req: Request,
  ): Promise<void> {
    await this.exports.cancel(ctx, exportRoute(req, params), params.jobId);
  }

  @UseTenant()
  @Get([
    'bulk-data/:version/$export/:type/:token.ndjson',
    'bulk-data/:version/Patient/$export/:type/:token.ndjson',
    'bulk-data/:version/Group/:groupId/$export/:type/:token.ndjson',
    ':version/$export/:type/:token.ndjson',
    ':version/Patient/$export/:type/:token.ndjson',
    ':version/Group/:groupId/$export/:type/:token.ndjson',
    'v1/:customer/bulk-export/bulk-data/r4/$export/:type/:token.ndjson',
    'v1/:customer/bulk-export/bulk-data/r4/Group/:groupId/$export/:type/:token.ndjson',
  ])
  @ApiOperation({
    summary: 'Download one NDJSON file of a manifest (same tenant; the link is signed and expires)',
  })
  @ApiProduces('application/fhir+ndjson')
  @ApiOkResponse({ description: 'one resource per line, streamed' })
  async downloadFile(
    @Tenant() ctx: TenantContext,
    @Param() params: RouteParams & { type: string; token: string },
    @Query() _query: unknown,
    @Req() req: Request,
    @Res() res: Response,
  ): Promise<void> {
    const source = await this.exports.openFile(ctx, exportRoute(req, params), params.type, params.token);
    const { bytes } = await streamNdjson(res, source);
    this.metrics.addExportBytes(bytes);
  }
}
