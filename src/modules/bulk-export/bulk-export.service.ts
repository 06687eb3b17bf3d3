import { randomBytes } from 'crypto';
import { Inject, Injectable, Logger } from '@nestjs/common';
import { FhirVersion, OperationOutcomeError, parseFhirVersion } from '@app/fhir';
import { SETTINGS } from '../../config/config.module';
import { Settings } from '../../config/settings';
import { TenantContext } from '../../tenancy/tenant-context';
import { ExportFileClaims, signFileToken, verifyFileToken } from './export-file-token';
import { ExportJobDoc, ExportJobsRepository, ExportKind, PlannedFile } from './export-jobs.repository';
import { parseExportParameters, RawQuery } from './export-parameters';
import { ExportPlan, ExportPlanner, ExportScope } from './export-planner';
import { ExportResourcesRepository } from './export-resources.repository';
import { EXPORT_SIGNING_KEY } from './export-signing-key';
import type { LineSource } from './ndjson-response';
import { asOwner } from '../../storage/tenant-scope';

/** Which of the spec's hosts a route belongs to (its public URL is a setting). */
export type ExportHost = 'analytics' | 'gateway' | 'base';

export interface ExportRoute {
  host: ExportHost;
  /** Raw `{fhirVersion}` path segment (`r4` on the population routes). */
  version: string;
  /** Population routes: the `{customer}` path segment. */
  customer?: string;
}

export interface KickOffRequest extends ExportRoute {
  kind: ExportKind;
  groupId?: string;
  query: RawQuery;
  /** Path and query as received, for the manifest's `request`. */
  originalUrl: string;
  prefer?: string;
  /** The request also carried x-service-user-id / x-app-user-id. */
  userHeaders: boolean;
}

/** https://hl7.org/fhir/uv/bulkdata/export.html#response---complete-status */
export interface ExportManifest {
  transactionTime: string;
  request: string;
  requiresAccessToken: true;
  output: Array<{ type: string; url: string; count: number }>;
  error: never[];
}

export type KickOffResult = { manifest: ExportManifest } | { statusUrl: string };
export type JobStatus = { progress: string; retryAfterSeconds: number } | { manifest: ExportManifest };

/** How long an asynchronous job (and its status URL) lives. */
const JOB_TTL_MS = 24 * 3600_000;

@Injectable()
export class BulkExportService {
  private readonly logger = new Logger('BulkExport');

  constructor(
    @Inject(SETTINGS) private readonly settings: Settings,
    @Inject(EXPORT_SIGNING_KEY) private readonly signingKey: Buffer,
    private readonly planner: ExportPlanner,
    private readonly resources: ExportResourcesRepository,
    private readonly jobs: ExportJobsRepository,
  ) {}

  private hostUrl(host: ExportHost): string {
    return this.settings.urls[host];
  }

  /** The path up to the version: `/bulk-data/r4`, `/v1/acme/bulk-export/bulk-data/r4`, `/r4`. */
  private routePrefix(route: ExportRoute, v: FhirVersion): string {
    if (route.customer !== undefined)
      return `/v1/${encodeURIComponent(route.customer)}/bulk-export/bulk-data/r4`;
    return route.host === 'analytics' ? `/bulk-data/${v}` : `/${v}`;
  }

  private version(route: ExportRoute): FhirVersion {
    const v = parseFhirVersion(route.version);
    if (!v) throw OperationOutcomeError.notFound(`unknown FHIR version "${route.version}"`);
    return v;
  }

  /** Population routes: a client-level program token with a bulk-data scope, of that customer. */
  private authorizePopulation(ctx: TenantContext, customer: string | undefined): void {
    if (customer === undefined) return;
    if (ctx.form !== 'client-token' || !ctx.scopes.includes('bulk-data')) {
      throw new OperationOutcomeError(
        'forbidden',
        'population export needs a client-level token with the bulk-data scope from a program realm',
      );
    }
    if (ctx.customer !== customer) {
      throw new OperationOutcomeError('forbidden', `this client may not export for customer "${customer}"`);
    }
  }

  async kickOff(ctx: TenantContext, req: KickOffRequest): Promise<KickOffResult> {
    const v = this.version(req);
    this.authorizePopulation(ctx, req.customer);
    if (ctx.form === 'user-token' && req.userHeaders) {
      // The guard lets a user token win; for an export that silently narrows "client" to one user.
      throw OperationOutcomeError.invalid(
        'x-service-user-id / x-app-user-id cannot be combined with a user access token: a user token exports its own user',
      );
    }
    const prefer = (req.prefer ?? '').toLowerCase();
    const params = parseExportParameters(v, req.query, /handling\s*=\s*lenient/.test(prefer));
    if (params.patients && req.kind === 'system') {
      throw OperationOutcomeError.invalid('patient applies to Patient and Group exports only', 'patient');
    }
    const scope: ExportScope = {
      v,
      kind: req.kind,
      groupId: req.groupId ?? null,
      types: params.types,
      since: params.since,
      patients: params.patients,
      transactionTime: new Date(),
    };
    const base = `${this.hostUrl(req.host)}${this.routePrefix(req, v)}`;
    const kindPath =
      req.kind === 'patient'
        ? '/Patient'
        : req.kind === 'group'
          ? `/Group/${encodeURIComponent(req.groupId!)}`
          : '';
    const exportUrl = `${base}${kindPath}/$export`;
    const request = `${this.hostUrl(req.host)}${req.originalUrl}`;
    if (!/respond-async/.test(prefer)) {
      const plan = await this.planner.plan(ctx, scope, this.settings.exportFileMaxResources);
      return { manifest: this.manifest(ctx, scope, plan, exportUrl, request) };
    }
    // Async: a Group that does not exist is still a kick-off error (4xx now, not a failed job).
    if (scope.kind === 'group') await this.planner.groupMembers(ctx, v, scope.groupId!);
    const job = await this.jobs.create(ctx, {
      _id: randomBytes(16).toString('hex'),
      v,
      kind: scope.kind,
      groupId: scope.groupId,
      types: scope.types,
      since: scope.since,
      patients: scope.patients ?? null,
      exportUrl,
      request,
      transactionTime: scope.transactionTime,
      startedAt: new Date(),
      exp: new Date(Date.now() + JOB_TTL_MS),
    });
    this.runJob(ctx, job);
    return { statusUrl: `${base}/$export-status/${job._id}` };
  }

  /**
   * Computes the plan in the background; the status endpoint reports it when recorded. The run
   * beats every quarter of the stale time; when a beat finds the job no longer its own (re-claimed
   * after a silence, cancelled), the run stops instead of racing the new one.
   */
  private runJob(ctx: TenantContext, job: ExportJobDoc): void {
    const jobCtx = asOwner(ctx, job.u);
    const scope: ExportScope = { ...job };
    const run = new AbortController();
    const beat = setInterval(
      () => {
        this.jobs
          .heartbeat(job)
          .then((mine) => (mine ? undefined : run.abort()))
          .catch(() => undefined); // a missed beat: the next one tries again
      },
      Math.max(50, Math.floor(this.settings.exportJobStaleMs / 4)),
    );
    beat.unref();
    this.planner
      .plan(jobCtx, scope, this.settings.exportFileMaxResources, run.signal)
      .then((plan) => this.jobs.complete(job, plan.files, plan.group))
      .catch(async (err: unknown) => {
        if (run.signal.aborted) {
          this.logger.warn({ job: job._id }, 'export run stopped: the job was taken over or cancelled');
          return;
        }
        const message =
          err instanceof OperationOutcomeError ? err.message : 'the export could not be prepared';
        if (!(err instanceof OperationOutcomeError))
          this.logger.error({ err, job: job._id }, 'export job failed');
        await this.jobs.fail(job, message).catch(() => undefined);
      })
      .finally(() => clearInterval(beat));
  }

  async status(ctx: TenantContext, route: ExportRoute, jobId: string): Promise<JobStatus> {
    this.version(route);
    this.authorizePopulation(ctx, route.customer);
    const job = await this.jobs.find(ctx, jobId);
    if (!job)
      throw OperationOutcomeError.notFound(
        `export job ${jobId} is not known (finished jobs expire, cancelled ones are gone)`,
      );
    if (job.state === 'failed') {
      throw new OperationOutcomeError('exception', job.error ?? 'the export failed', { status: 500 });
    }
    if (job.state === 'in-progress') {
      const silentSince = new Date(Date.now() - this.settings.exportJobStaleMs);
      if ((job.beat ?? job.startedAt) < silentSince) {
        const claimed = await this.jobs.reclaim(job, silentSince);
        if (claimed) this.runJob(ctx, { ...job, startedAt: claimed, beat: claimed });
      }
      return { progress: 'computing the file list', retryAfterSeconds: 1 };
    }
    const jobCtx = asOwner(ctx, job.u);
    return {
      manifest: this.manifest(
        jobCtx,
        job,
        { files: job.files, group: job.group },
        job.exportUrl,
        job.request,
      ),
    };
  }

  async cancel(ctx: TenantContext, route: ExportRoute, jobId: string): Promise<void> {
    this.version(route);
    this.authorizePopulation(ctx, route.customer);
    if (!(await this.jobs.remove(ctx, jobId)))
      throw OperationOutcomeError.notFound(`export job ${jobId} is not known`);
  }

  private manifest(
    ctx: TenantContext,
    scope: Pick<ExportScope, 'v' | 'kind' | 'since' | 'transactionTime' | 'patients'>,
    plan: ExportPlan,
    exportUrl: string,
    request: string,
  ): ExportManifest {
    const exp = Math.floor(Date.now() / 1000) + this.settings.exportLinkTtlSeconds;
    const link = (file: PlannedFile) => {
      const claims: ExportFileClaims = {
        v: scope.v,
        c: ctx.clientId,
        u: ctx.userId,
        t: file.type,
        since: scope.since ? scope.since.getTime() : null,
        tt: scope.transactionTime.getTime(),
        from: file.from,
        to: file.to,
        exp,
      };
      if (file.bounds) claims.b = file.bounds;
      if (plan.group) claims.g = plan.group;
      if (scope.patients) claims.p = scope.patients;
      if (scope.kind === 'patient') claims.k = 'patient';
      return `${exportUrl}/${file.type}/${signFileToken(this.signingKey, claims)}.ndjson`;
    };
    return {
      transactionTime: scope.transactionTime.toISOString(),
      request,
      requiresAccessToken: true,
      output: plan.files.map((file) => ({ type: file.type, url: link(file), count: file.count })),
      error: [],
    };
  }

  /**
   * Opens one file for streaming. The link must be intact and unexpired, name the type in its path,
   * and belong to the caller's tenant: another tenant's link is "not found", never a byte of it.
   */
  async openFile(ctx: TenantContext, route: ExportRoute, type: string, token: string): Promise<LineSource> {
    const v = this.version(route);
    const check = verifyFileToken(this.signingKey, token);
    if (!check.ok && check.reason === 'expired') {
      throw new OperationOutcomeError('expired', 'this export file link has expired; run the export again', {
        status: 401,
      });
    }
    const notFound = () => OperationOutcomeError.notFound('export file not found');
    if (!check.ok) throw notFound();
    const claims = check.claims;
    const sameTenant = claims.c === ctx.clientId && (ctx.userId === null || ctx.userId === claims.u);
    if (claims.v !== v || claims.t !== type || !sameTenant) throw notFound();
    const fileCtx = asOwner(ctx, claims.u);
    const scope: ExportScope = {
      v,
      kind: claims.g ? 'group' : (claims.k ?? 'system'),
      groupId: claims.g?.id ?? null,
      types: [type],
      patients: claims.p ?? null,
      since: claims.since === null ? null : new Date(claims.since),
      transactionTime: new Date(claims.tt),
    };
    let patientIds: string[] | undefined;
    if (claims.g) {
      const members = await this.planner.groupMembers(fileCtx, v, claims.g.id).catch(() => null);
      if (!members || members.vid !== claims.g.vid) {
        throw OperationOutcomeError.notFound(
          `Group/${claims.g.id} changed since the export; run the export again`,
        );
      }
      patientIds = members.patientIds;
    }
    patientIds = this.planner.patientsOf(scope, patientIds);
    const range = { from: claims.from, to: claims.to, bounds: claims.b };
    return this.resources.openFileLines(fileCtx, this.planner.selection(scope, type, patientIds), range);
  }
}
