import { Controller, Delete, Get, Inject, Param, Req, Res } from '@nestjs/common';
import {
  ApiAcceptedResponse,
  ApiHeader,
  ApiOkResponse,
  ApiOperation,
  ApiParam,
  ApiProduces,
  ApiQuery,
} from '@nestjs/swagger';
import { ApiTags } from '@nestjs/swagger';
import type { Request, Response } from 'express';
import { issue, operationOutcome, type FhirVersion } from '@app/fhir';
import { FhirOperation, FhirRoute, FhirVersionParam } from '../../fhir-http';
import type { Accepted, InProgress, OperationOutput } from '../../fhir-http/results';
import type { FhirOperationDefinition } from '../../fhir-http/fhir-operation-definition';
import { FhirIdParam, FhirTypeParam } from '../../fhir-http/fhir-params';
import { MetricsService } from '../../metrics/metrics.service';
import { Tenant } from '../../tenancy/use-tenant.decorator';
import type { TenantContext } from '../../tenancy/tenant-context';
import { SETTINGS } from '../../config/config.module';
import type { Settings } from '../../config/settings';
import { BulkExportService, ExportManifest, ExportRoute, KickOffResult } from './bulk-export.service';
import { parametersToQuery, type RawQuery } from './export-parameters';
import { streamNdjson } from './ndjson-response';

const BULK_DATA = 'http://hl7.org/fhir/uv/bulkdata/OperationDefinition';

/**
 * `$export` (https://hl7.org/fhir/uv/bulkdata/export.html) at system, Patient and Group level, on
 * the store's base, the analytics base and (system and Group) the population gateway.
 */
const EXPORT: FhirOperationDefinition = {
  name: 'export',
  levels: ['system', 'type', 'instance'],
  definition: `${BULK_DATA}/export`,
  at: {
    type: { types: ['Patient'], definition: `${BULK_DATA}/patient-export`, bases: ['store', 'bulk-data'] },
    instance: { types: ['Group'], definition: `${BULK_DATA}/group-export` },
  },
  bases: ['store', 'bulk-data', 'gateway'],
  route: { lane: 'bulk' },
  description:
    'Bulk Data export of the tenant (system), of the Patient compartments, or of a Group: a manifest ' +
    'of NDJSON files, at once or with Prefer: respond-async',
};

const BASES = ['store', 'bulk-data', 'gateway'] as const;

/** Which host a matched route belongs to; the gateway routes are R4 only. */
function exportRoute(req: Request, version: FhirVersion): ExportRoute {
  const customer = (req.params as Record<string, string | undefined>).customer;
  if (customer !== undefined) return { host: 'gateway', version: 'r4', customer };
  return { host: req.path.startsWith('/bulk-data/') ? 'analytics' : 'base', version };
}

/** The complete-status manifest: application/json (export.html#response---complete-status); Expires = when its links expire. */
function manifestReply(manifest: ExportManifest, linkTtlSeconds: number): OperationOutput {
  return {
    kind: 'output',
    body: manifest,
    mediaType: 'application/json',
    expires: new Date(Date.now() + linkTtlSeconds * 1000),
  };
}

/**
 * 200 with the manifest, or 202 + Content-Location with `Prefer: respond-async` and an
 * OperationOutcome body (https://hl7.org/fhir/uv/bulkdata/export.html#response---success).
 */
function kickOffReply(result: KickOffResult, linkTtlSeconds: number): OperationOutput | Accepted {
  if (!('statusUrl' in result)) return manifestReply(result.manifest, linkTtlSeconds);
  return {
    kind: 'accepted',
    statusUrl: result.statusUrl,
    outcome: operationOutcome([
      issue('informational', `export accepted: poll ${result.statusUrl}`, { severity: 'information' }),
    ]),
  };
}

/**
 * Bulk export on all its hosts: `{analytics_url}/bulk-data/{v}`,
 * `{gateway_url}/v1/{customer}/bulk-export/bulk-data/r4` and `{base_url}/{v}`.
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

  @FhirOperation(EXPORT)
  @ApiQuery({
    name: '_type',
    required: false,
    description: 'comma-separated resource types; an unknown one → 400',
  })
  @ApiQuery({
    name: '_since',
    required: false,
    description: 'YYYY-MM-DD or an instant; lastUpdated later than it',
  })
  @ApiQuery({
    name: '_outputFormat',
    required: false,
    description: 'application/fhir+ndjson (the only format)',
  })
  @ApiHeader({
    name: 'Prefer',
    required: false,
    description: '`respond-async` for the Bulk Data IG async flow',
  })
  @ApiOkResponse({
    description: 'the manifest: transactionTime, request, requiresAccessToken, output[{type,url,count}]',
  })
  @ApiAcceptedResponse({ description: 'async kick-off accepted; Content-Location = status URL' })
  async kickOff(
    @Tenant() ctx: TenantContext,
    @FhirVersionParam() version: FhirVersion,
    @FhirTypeParam('optional') type: string | undefined,
    @FhirIdParam('optional') groupId: string | undefined,
    @Req() req: Request,
  ): Promise<OperationOutput | Accepted> {
    // POST kick-off: the Parameters body carries the parameters (export.html#post-body)
    const query = req.method === 'POST' ? parametersToQuery(req.body) : (req.query as RawQuery);
    const result = await this.exports.kickOff(ctx, {
      ...exportRoute(req, version),
      kind: type === 'Patient' ? 'patient' : type === 'Group' ? 'group' : 'system',
      groupId,
      query,
      originalUrl: req.originalUrl,
      prefer: req.get('prefer'),
      userHeaders: req.get('x-service-user-id') !== undefined || req.get('x-app-user-id') !== undefined,
    });
    return kickOffReply(result, this.ttl);
  }

  @Get([
    'bulk-data/:version/$export-status/:jobId',
    ':version/$export-status/:jobId',
    'v1/:customer/bulk-export/bulk-data/r4/$export-status/:jobId',
  ])
  @FhirRoute({ bases: BASES, lane: 'bulk' })
  @ApiOperation({
    summary: 'Async export status: 202 with X-Progress until ready, then 200 with the manifest',
  })
  @ApiOkResponse({ description: 'the manifest' })
  @ApiAcceptedResponse({ description: 'still in progress (X-Progress, Retry-After)' })
  async jobStatus(
    @Tenant() ctx: TenantContext,
    @FhirVersionParam() version: FhirVersion,
    @Param('jobId') jobId: string,
    @Req() req: Request,
  ): Promise<OperationOutput | InProgress> {
    const status = await this.exports.status(ctx, exportRoute(req, version), jobId);
    if ('manifest' in status) return manifestReply(status.manifest, this.ttl);
    return { kind: 'in-progress', progress: status.progress, retryAfterSeconds: status.retryAfterSeconds };
  }

  // Cancelling a job changes no FHIR data: allowed to read-only and client-wide credentials.
  @Delete([
    'bulk-data/:version/$export-status/:jobId',
    ':version/$export-status/:jobId',
    'v1/:customer/bulk-export/bulk-data/r4/$export-status/:jobId',
  ])
  @FhirRoute({ bases: BASES, kind: 'read', status: 202, lane: 'bulk' })
  @ApiOperation({ summary: 'Cancel an async export (later status requests → 404)' })
  @ApiAcceptedResponse({ description: 'cancelled' })
  async cancelJob(
    @Tenant() ctx: TenantContext,
    @FhirVersionParam() version: FhirVersion,
    @Param('jobId') jobId: string,
    @Req() req: Request,
  ): Promise<void> {
    await this.exports.cancel(ctx, exportRoute(req, version), jobId);
  }

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
  @FhirRoute({ bases: BASES, negotiate: false, lane: 'bulk' })
  @ApiOperation({
    summary: 'Download one NDJSON file of a manifest (same tenant; the link is signed and expires)',
  })
  @ApiProduces('application/fhir+ndjson')
  @ApiParam({ name: 'type', description: 'resource type of the file' })
  @ApiOkResponse({ description: 'one resource per line, streamed' })
  async downloadFile(
    @Tenant() ctx: TenantContext,
    @FhirVersionParam() version: FhirVersion,
    @FhirTypeParam() type: string,
    @Param('token') token: string,
    @Req() req: Request,
    // a stream is written as it is read: the one handler that writes its own answer
    @Res() res: Response,
  ): Promise<void> {
    const source = await this.exports.openFile(ctx, exportRoute(req, version), type, token);
    const { bytes } = await streamNdjson(res, source);
    this.metrics.addExportBytes(bytes);
  }
}
