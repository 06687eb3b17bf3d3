import { Injectable } from '@nestjs/common';
import { InjectModel } from '@nestjs/mongoose';
import { Model, Schema, type mongo } from 'mongoose';
import type { FhirVersion } from '@app/fhir';
import type { TenantContext } from '../../tenancy/tenant-context';
import {
  clientScope,
  type Conditions,
  ScopedCollection,
  type ScopedFilter,
} from '../../storage/tenant-scope';

/**
 * One asynchronous kick-off (Bulk Data IG async flow). The job holds the request and, once computed,
 * the file plan (type + key range + count); file URLs are signed afresh on each status read, so the
 * job never stores a credential. Jobs expire (`exp`: a TTL index; reads ignore expired jobs until
 * the engine's TTL monitor has removed them).
 */
export type ExportKind = 'system' | 'patient' | 'group';
export type JobState = 'in-progress' | 'complete' | 'failed';

/** One file of a plan: its type, key range (export-resources.repository.ts `KeyRange`) and count. */
export interface PlannedFile {
  type: string;
  from: string | null;
  to: string | null;
  /** 'half-open': [from, to); absent (jobs planned by older versions): (from, to]. */
  bounds?: 'half-open';
  count: number;
}

export interface ExportJobDoc {
  _id: string;
  c: string;
  /** null = every user of the client. */
  u: number | null;
  v: FhirVersion;
  kind: ExportKind;
  groupId: string | null;
  types: string[] | null;
  since: Date | null;
  /** `patient` kick-off parameter (ids), or null. */
  patients: string[] | null;
  /** Absolute export URL (file links hang below it) and the kick-off request URL. */
  exportUrl: string;
  request: string;
  transactionTime: Date;
  state: JobState;
  /** The claim of the run computing the plan: a re-claim replaces it and stops the old run. */
  startedAt: Date;
  /** Heartbeat of the run computing the plan; a job silent for too long may be re-claimed. */
  beat: Date;
  files: PlannedFile[];
  group: { id: string; vid: number } | null;
  error: string | null;
  exp: Date;
}

export const EXPORT_JOB_MODEL = 'ExportJob';

export const ExportJobSchema = new Schema<ExportJobDoc>(
  {
    _id: String,
    c: { type: String, required: true },
    u: { type: Number, default: null },
    v: { type: String, required: true },
    kind: { type: String, required: true },
    groupId: { type: String, default: null },
    types: { type: [String], default: null },
    since: { type: Date, default: null },
    patients: { type: [String], default: null },
    exportUrl: { type: String, required: true },
    request: { type: String, required: true },
    transactionTime: { type: Date, required: true },
    state: { type: String, required: true },
    startedAt: { type: Date, required: true },
    beat: { type: Date, required: true },
    files: {
      type: [{ _id: false, type: String, from: String, to: String, bounds: String, count: Number }],
      default: [],
    },
    group: { type: new Schema({ id: String, vid: Number }, { _id: false }), default: null },
    error: { type: String, default: null },
    exp: { type: Date, required: true },
  },
  { collection: 'export_jobs', versionKey: false },
);
ExportJobSchema.index({ exp: 1 }, { name: 'export_job_expiry', expireAfterSeconds: 0 });

/** One run of a job: the job, its owner and the run's claim. */
export type JobRun = Pick<ExportJobDoc, '_id' | 'c' | 'u' | 'startedAt'>;

export type NewExportJob = Omit<ExportJobDoc, 'c' | 'u' | 'state' | 'files' | 'group' | 'error' | 'beat'>;

@Injectable()
export class ExportJobsRepository {
  private readonly collection: mongo.Collection<ExportJobDoc>;

  constructor(@InjectModel(EXPORT_JOB_MODEL) model: Model<ExportJobDoc>) {
    this.collection = model.collection as unknown as mongo.Collection<ExportJobDoc>;
  }

  /**
   * The jobs of the context's tenant: its user's, or for a client-wide credential all its users'
   * (it sees their data too). Kick-off, status and cancel go through it; the run of a job (complete,
   * fail, heartbeat, reclaim) works on the one job it was given, in that job's own scope.
   */
  private scoped(ctx: TenantContext): ScopedCollection<ExportJobDoc> {
    return new ScopedCollection(this.collection, clientScope(ctx, ctx.userId));
  }

  async create(ctx: TenantContext, job: NewExportJob): Promise<ExportJobDoc> {
    const doc: ExportJobDoc = {
      ...job,
      c: ctx.clientId,
      u: ctx.userId,
      state: 'in-progress',
      beat: job.startedAt,
      files: [],
      group: null,
      error: null,
    };
    await this.scoped(ctx).insertOne(doc);
    return doc;
  }

  /**
   * The tenant's unexpired job: another client's (or, for a user credential, another user's) job is
   * not found. A client-wide credential sees its users' jobs, as it sees their data.
   */
  async find(ctx: TenantContext, id: string): Promise<ExportJobDoc | null> {
    const jobs = this.scoped(ctx);
    return jobs.findOne(jobs.where({ _id: id }, { exp: { $gt: new Date() } }));
  }

  /**
   * The run of a job works on that one job, with no caller: it is scoped to the job's own owner
   * (its client, and its user or the whole client), by id and claim (`startedAt`).
   */
  private ofRun(
    run: JobRun,
    also: Conditions<ExportJobDoc> = {},
  ): { jobs: ScopedCollection<ExportJobDoc>; claim: ScopedFilter<ExportJobDoc> } {
    const jobs = new ScopedCollection(this.collection, clientScope({ clientId: run.c }, run.u));
    const claim = jobs.where({ _id: run._id, state: 'in-progress', startedAt: run.startedAt }, also);
    return { jobs, claim };
  }

  /** Records the plan unless the job was cancelled or re-claimed meanwhile (`startedAt` is the claim). */
  async complete(run: JobRun, files: PlannedFile[], group: ExportJobDoc['group']): Promise<void> {
    const { jobs, claim } = this.ofRun(run);
    await jobs.updateOne(claim, { $set: { state: 'complete', files, group } });
  }

  async fail(run: JobRun, error: string): Promise<void> {
    const { jobs, claim } = this.ofRun(run);
    await jobs.updateOne(claim, { $set: { state: 'failed', error } });
  }

  /**
   * The running plan says it is alive. False when the job is no longer this run's (re-claimed by
   * another poller, cancelled, finished): the run then stops.
   */
  async heartbeat(run: JobRun): Promise<boolean> {
    const { jobs, claim } = this.ofRun(run);
    const res = await jobs.updateOne(claim, { $set: { beat: new Date() } });
    return res.matchedCount === 1;
  }

  /**
   * Takes over a job whose run has not beaten since `silentSince` (compare-and-set on the claim, so
   * one poller wins). Returns the new claim time, or null when the job is alive or someone else took it.
   */
  async reclaim(previous: JobRun, silentSince: Date): Promise<Date | null> {
    const now = new Date();
    const { jobs, claim } = this.ofRun(previous, { beat: { $lt: silentSince } });
    const res = await jobs.updateOne(claim, { $set: { startedAt: now, beat: now } });
    return res.modifiedCount === 1 ? now : null;
  }

  /** DELETE on the status URL: the job is gone for every later poll. */
  async remove(ctx: TenantContext, id: string): Promise<boolean> {
    const jobs = this.scoped(ctx);
    const filter = jobs.where({ _id: id });
    // A delete that meets the run's concurrent `complete` of the same job can match nothing on
    // DocumentDB (seen in e2e once plans became fast): a job still there is deleted again.
    for (let attempt = 0; attempt < 3; attempt += 1) {
      if ((await jobs.deleteOne(filter)).deletedCount === 1) return true;
      if (!(await jobs.findOne(filter, { projection: { _id: 1 } }))) return false;
    }
    return false;
  }
}
