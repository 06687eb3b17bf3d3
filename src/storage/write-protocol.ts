import { Inject, Injectable } from '@nestjs/common';
import {
  buildProvenance,
  newResourceId,
  OperationOutcomeError,
  provenanceIdFor,
  resourceKey,
  stampResource,
  type FhirVersion,
} from '@app/fhir';
import { inTurns } from '../admission/event-loop-time';
import { badNodeError, tooLargeError } from '../common/body-hygiene';
import { SETTINGS } from '../config/config.module';
import type { Settings } from '../config/settings';
import type { Permission } from '../tenancy/smart-scopes';
import type { TenantContext } from '../tenancy/tenant-context';
import { assertMayWrite } from './smart-access';
import { historyOf, type HistoryDoc, type ResourceDoc } from './documents';
import { ResourceRepository } from './resource.repository';
import { ResourceWritesRepository } from './resource-writes.repository';
import { searchIndexOf } from './search-indexing';
import { asOwner } from './tenant-scope';

/** One version written: what the response needs. */
export interface WrittenVersion {
  doc: ResourceDoc;
  /** True when this write made the resource exist (version 1, or a write after a delete). */
  created: boolean;
}

/** A version just stored in `resources`, and the one it replaced (for its history row). */
export interface CompletedWrite {
  previous: ResourceDoc | null;
  doc: ResourceDoc;
  /** The version's history row is in already (it was claimed before the current document moved). */
  historyWritten?: boolean;
}

/**
 * The writes of one transaction or batch whose history rows and Provenance are recorded once, after
 * the bundle's last write (`WriteProtocol.recordProvenance`), instead of per entry (docs/storage.md).
 */
export class BundleWrites {
  readonly writes: CompletedWrite[] = [];
  /**
   * The key of the Provenance the bundle will have, named after its first create and claimed
   * in the same insert as the bundle's ids (`createMany`), so that the Provenance needs no claim step of
   * its own at the end.
   */
  claimedProvenance?: string;

  push(...writes: CompletedWrite[]): void {
    this.writes.push(...writes);
  }
}

/** How `upsert` writes: see there. */
export interface UpsertOptions {
  ifMatch?: number;
  known?: ResourceDoc | null;
  createOnly?: boolean;
  bundle?: BundleWrites;
}

/** A resource to create with the id it names (bundle ingest). */
export interface NewResource {
  type: string;
  id: string;
  resource: Record<string, unknown>;
}

/** What became of one `NewResource`: created, an id that exists already, or refused (`error`). */
export type NewResourceOutcome = { written: WrittenVersion } | { exists: true } | { error: unknown };

/** A claimed version whose current document has not moved for this long is taken as abandoned. */
const STALE_CLAIM_MS = 10_000;

/** How long one write keeps retrying against concurrent writers of the same resource. */
const CAS_DEADLINE_MS = 60_000;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Backoff with jitter between compare-and-set attempts, so that N racing writers spread out. */
function backoff(attempt: number): Promise<unknown> {
  return sleep(Math.random() * Math.min(5 + attempt * 5, 100));
}

export function writerUserId(ctx: TenantContext): number {
  // The tenant guard refuses writes without one user (docs/api.md §2: `client` is for GET only).
  if (ctx.userId === null) {
    throw new OperationOutcomeError(
      'forbidden',
      'writes need one user: x-service-user-id "client" is for reads only',
    );
  }
  return ctx.userId;
}

/**
 * The write protocol of docs/storage.md: compare-and-set on `resources`, then the history row(s),
 * then the Provenance (docs/api.md §5). Each step is idempotent under retry; a crash between steps leaves
 * what readers cannot see and `store check --repair` mends.
 */
@Injectable()
export class WriteProtocol {
  constructor(
    private readonly reads: ResourceRepository,
    private readonly writes: ResourceWritesRepository,
    @Inject(SETTINGS) private readonly settings: Settings,
  ) {}

  /**
   * The document of one version: meta stamped into the served JSON, search index extracted. Every
   * version any route stores (create, update, conditional and patch results, bundle entries) is
   * built here, so the limits on a stored resource are checked here, on what would be stored.
   */
  buildDoc(
    ctx: TenantContext,
    version: FhirVersion,
    type: string,
    id: string,
    versionId: number,
    lastUpdated: Date,
    resource: Record<string, unknown>,
  ): ResourceDoc {
    const stamped = stampResource(resource, id, versionId, lastUpdated);
    const json = JSON.stringify(stamped);
    this.assertWithinLimits(type, stamped, json);
    const doc: ResourceDoc = {
      _id: resourceKey(version, ctx.clientId, type, id),
      v: version,
      c: ctx.clientId,
      u: writerUserId(ctx),
      t: type,
      id,
      vid: versionId,
      lu: lastUpdated,
      del: false,
      json,
    };
    const idx = searchIndexOf(version, stamped, this.settings);
    if (idx !== undefined) doc.idx = idx;
    return doc;
  }

  /**
   * MAX_RESOURCE_BYTES (413), MAX_ARRAY_LENGTH and FHIR strings (400) on the resource as it would be
   * stored: the body guard refuses most bodies earlier, but a patch result, a JSON Patch (an array
   * body) or a bundle entry after placeholder rewriting is only known here. Nothing is stored.
   */
  private assertWithinLimits(type: string, stamped: Record<string, unknown>, json: string): void {
    const bytes = Buffer.byteLength(json);
    const { maxResourceBytes, maxArrayLength } = this.settings;
    if (bytes > maxResourceBytes)
      throw tooLargeError(`${type} as it would be stored`, bytes, maxResourceBytes);
    const bad = badNodeError(stamped, type, maxArrayLength);
    if (bad) throw bad;
  }

  /**
   * Refuses (403) a write the context's SMART scopes do not allow on `doc` (smart-access.ts):
   * a version to be written, or the stored one it replaces or deletes. A stored document read
   * without its search index has it extracted again, only when a scope narrower than a type
   * (a patient's compartment, a category) needs it.
   */
  assertMayWrite(ctx: TenantContext, permission: Permission, doc: ResourceDoc): void {
    const index = (): object | undefined =>
      doc.idx ??
      (doc.json === null
        ? undefined
        : searchIndexOf(doc.v, JSON.parse(doc.json) as Record<string, unknown>, this.settings));
    assertMayWrite(ctx, permission, { v: doc.v, t: doc.t, id: doc.id, index });
  }

  /** Create with a server-assigned id (`POST /{v}/{type}` without id). */
  async createWithNewId(
    ctx: TenantContext,
    version: FhirVersion,
    type: string,
    resource: Record<string, unknown>,
  ): Promise<WrittenVersion> {
    for (;;) {
      const doc = this.buildDoc(ctx, version, type, newResourceId(), 1, new Date(), resource);
      this.assertMayWrite(ctx, 'c', doc);
      if (await this.writes.insertCurrent(ctx, doc)) {
        await this.complete(ctx, version, [{ previous: null, doc }]);
        return { doc, created: true };
      }
    }
  }

  /**
   * Creates of chosen ids with no look-up first (ids chosen client-side are new in the common
   * case): one bulk insert of the current documents; their history rows and their Provenance
   * are the bundle's (`bundle`, written by `recordProvenance`). An id that exists comes back as `exists` (the caller updates it
   * with `upsert`); a resource that may not be stored (limits, scopes) as its `error`.
   */
  async createMany(
    ctx: TenantContext,
    version: FhirVersion,
    resources: readonly NewResource[],
    bundle: BundleWrites,
  ): Promise<NewResourceOutcome[]> {
    const lastUpdated = new Date();
    const outcomes: NewResourceOutcome[] = new Array<NewResourceOutcome>(resources.length);
    const fresh: Array<[number, ResourceDoc]> = [];
    // each document built (search index extracted) in a turn of the event loop of its own
    await inTurns(ctx, resources, ({ type, id, resource }, index) => {
      try {
        const doc = this.buildDoc(ctx, version, type, id, 1, lastUpdated, resource);
        this.assertMayWrite(ctx, 'c', doc);
        fresh.push([index, doc]);
      } catch (error) {
        outcomes[index] = { error };
      }
    });
    const docs = fresh.map(([, doc]) => doc);
    // The bundle's Provenance is named after its first create (`provenanceFor`). Only the holder
    // of a resource's id may claim the id of that resource's Provenance, so a user who loses a
    // race for an id never takes the winner's Provenance id: the Provenance's id is claimed in the
    // same ordered insert as the ids, right after the first one's, and only if that one is new.
    const provenanceKeyOf = (doc: ResourceDoc) =>
      resourceKey(version, ctx.clientId, 'Provenance', provenanceIdFor(doc._id, doc.vid));
    const expected = bundle.writes.length === 0 ? docs.find((doc) => doc.t !== 'Provenance') : undefined;
    const {
      refused,
      fresh: unclaimedBefore,
      followerClaimed,
    } = await this.writes.claimNew(
      ctx,
      docs,
      expected && { after: expected._id, key: provenanceKeyOf(expected) },
    );
    const claimed = docs.filter((doc) => !refused.has(doc._id));
    const first = bundle.writes.length === 0 ? claimed.find((doc) => doc.t !== 'Provenance') : undefined;
    // Claimed with the ids already, or (the first id was another user's, or the Provenance's id
    // was taken: rare) claimed beside the insert, when that first create's id was nobody's.
    const claimedBefore = followerClaimed && first === expected;
    const provenanceKey =
      first && unclaimedBefore.has(first._id) && !claimedBefore ? provenanceKeyOf(first) : undefined;
    const [existing, provenanceClaimed] = await Promise.all([
      this.writes.insertClaimed(ctx, claimed),
      provenanceKey === undefined ? claimedBefore : this.writes.claimForWriter(ctx, provenanceKey),
    ]);
    if (provenanceClaimed && !existing.has(first!._id)) bundle.claimedProvenance = provenanceKeyOf(first!);
    const conflicts = new Set([...refused, ...existing]);
    const inserted = fresh.filter(([, doc]) => !conflicts.has(doc._id));
    for (const [index, doc] of fresh) if (conflicts.has(doc._id)) outcomes[index] = { exists: true };
    await this.complete(
      ctx,
      version,
      inserted.map(([, doc]) => ({ previous: null, doc })),
      bundle,
    );
    for (const [index, doc] of inserted) outcomes[index] = { written: { doc, created: true } };
    return outcomes;
  }

  /**
   * Create-or-update of a chosen id (PUT, or POST with a client-supplied id, docs/api.md §5): a new
   * version of the caller's resource; 409 when another user of the client owns the id; 412 when
   * `ifMatch` names another version. Retries against concurrent writers until it lands.
   * `known` is a current document the caller already read (bundle ingest), `null` = known absent.
   * `bundle`: the write is a bundle entry; its Provenance is the bundle's (see `complete`).
   * `createOnly`: the id must not name a live resource (409): a conditional update that matched
   * nothing may create with the body's id but never overwrite another resource
   * (https://hl7.org/fhir/R4/http.html#cond-update).
   */
  async upsert(
    ctx: TenantContext,
    version: FhirVersion,
    type: string,
    id: string,
    resource: Record<string, unknown>,
    options: UpsertOptions = {},
  ): Promise<WrittenVersion> {
    const key = resourceKey(version, ctx.clientId, type, id);
    const userId = writerUserId(ctx);
    const deadline = Date.now() + CAS_DEADLINE_MS;
    let known = options.known;
    for (let attempt = 0; ; attempt++) {
      const current = known !== undefined ? known : await this.writes.findCurrentInClient(ctx, key);
      known = undefined;
      if (current && current.u !== userId) {
        throw new OperationOutcomeError('conflict', `${type}/${id} belongs to another user of this client`, {
          status: 409,
        });
      }
      if (options.createOnly && current && !current.del) {
        throw new OperationOutcomeError(
          'conflict',
          `${type}/${id} exists and does not match the criteria: a conditional update does not overwrite it`,
          { status: 409 },
        );
      }
      if (options.ifMatch !== undefined && options.ifMatch !== current?.vid) {
        throw new OperationOutcomeError(
          'conflict',
          `If-Match W/"${options.ifMatch}" does not match the current version of ${type}/${id}` +
            (current ? ` (W/"${current.vid}")` : ' (it does not exist)'),
          { status: 412 },
        );
      }
      const replaces = current !== null && !current.del;
      if (replaces) this.assertMayWrite(ctx, 'u', current);
      const doc = this.buildDoc(ctx, version, type, id, (current?.vid ?? 0) + 1, new Date(), resource);
      this.assertMayWrite(ctx, replaces ? 'u' : 'c', doc);
      const landed = current
        ? await this.replaceVersion(ctx, version, current, doc, attempt)
        : await this.writes.insertCurrent(ctx, doc);
      if (landed) {
        await this.complete(
          ctx,
          version,
          [{ previous: current, doc, historyWritten: current !== null }],
          options.bundle,
        );
        return { doc, created: !current || current.del };
      }
      if (Date.now() > deadline) {
        throw new OperationOutcomeError('transient', `too many concurrent writes to ${type}/${id}; retry`, {
          status: 503,
          headers: { 'Retry-After': '1' },
        });
      }
      await backoff(attempt);
    }
  }

  /**
   * `DELETE /{v}/{type}/{id}`: a tombstone version (docs/api.md §7). Deleting a deleted resource changes
   * nothing and answers its tombstone again. 404 when the caller has no such resource.
   */
  async delete(
    ctx: TenantContext,
    version: FhirVersion,
    type: string,
    id: string,
  ): Promise<{ versionId: number; alreadyDeleted: boolean }> {
    const key = resourceKey(version, ctx.clientId, type, id);
    writerUserId(ctx);
    for (let attempt = 0; ; attempt++) {
      const current = await this.reads.findCurrent(ctx, key);
      if (!current) throw OperationOutcomeError.notFound(`${type}/${id} is not known`);
      if (current.del) return { versionId: current.vid, alreadyDeleted: true };
      this.assertMayWrite(ctx, 'd', current);
      const tombstone: ResourceDoc = {
        ...current,
        vid: current.vid + 1,
        lu: new Date(),
        del: true,
        json: null,
      };
      delete tombstone.idx;
      if (await this.replaceVersion(ctx, version, current, tombstone, attempt)) {
        return { versionId: tombstone.vid, alreadyDeleted: false };
      }
      await backoff(attempt);
    }
  }

  /**
   * A new version of an existing resource: first claim the version by inserting its history row
   * (atomic on every engine: exactly one of concurrent writers gets version n), then move the
   * current document to it. False when another writer holds version n (re-read and retry).
   * A claim whose writer died before moving the current document (older than STALE_CLAIM_MS)
   * is rolled forward, so that the resource never stays blocked.
   */
  private async replaceVersion(
    ctx: TenantContext,
    version: FhirVersion,
    current: ResourceDoc,
    next: ResourceDoc,
    attempt: number,
  ): Promise<boolean> {
    const row = historyOf(next);
    if (!(await this.writes.claimVersion(ctx, historyOf(current), row))) {
      // Most misses are a concurrent writer that is about to finish: look at the holder only
      // when the miss persists (an orphan row or an abandoned claim).
      if (attempt < 3) return false;
      const holder = await this.writes.findHistoryRowByKey(ctx, row._id);
      if (!holder) return false;
      if (holder.lu < current.lu) {
        // An orphan of an earlier life of this id (interrupted removal): the version is free.
        if (!(await this.writes.replaceHistoryRow(ctx, row, holder.lu))) return false;
      } else {
        if (Date.now() - holder.lu.getTime() > STALE_CLAIM_MS)
          await this.rollForward(ctx, version, current, holder);
        return false;
      }
    }
    // Only the claimant of version n moves the current document from n-1 to n. A miss means the
    // claim was rolled forward by another writer meanwhile: the version landed all the same.
    await this.writes.compareAndSet(ctx, current._id, current.vid, next);
    return true;
  }

  /** Completes a claimed version whose writer died between its two steps. */
  private async rollForward(
    ctx: TenantContext,
    version: FhirVersion,
    current: ResourceDoc,
    holder: HistoryDoc,
  ): Promise<void> {
    const next: ResourceDoc = {
      ...current,
      vid: holder.vid,
      lu: holder.lu,
      del: holder.del,
      json: holder.json,
    };
    delete next.idx;
    if (holder.json !== null) {
      const idx = searchIndexOf(version, JSON.parse(holder.json) as Record<string, unknown>, this.settings);
      if (idx !== undefined) next.idx = idx;
    }
    if (await this.writes.compareAndSet(ctx, current._id, current.vid, next)) {
      await this.complete(ctx, version, [{ previous: current, doc: next, historyWritten: true }]);
    }
  }

  /**
   * Steps 2–3 for writes already in `resources`: history rows of the new versions, then the
   * Provenance of each create/update of a non-Provenance resource, one per write. For the entries
   * of a bundle (`bundle` given) both wait for the bundle's last write (`recordProvenance`): the
   * rows of all its new resources and its one Provenance then go in one history insert.
   */
  async complete(
    ctx: TenantContext,
    version: FhirVersion,
    writes: readonly CompletedWrite[],
    bundle?: BundleWrites,
  ): Promise<void> {
    if (bundle) {
      bundle.push(...writes);
      return;
    }
    const rows = pendingRows(writes);
    const provenances = provenanceGroups(writes).map(([activity, targets]) =>
      this.provenanceFor(ctx, version, targets, activity),
    );
    await this.storeProvenances(ctx, rows, provenances);
  }

  /**
   * Rewrites version `vid` of a resource in place, with no new version: its JSON and its search
   * index entries (`$everything` DELETE taking removed resources out of a bundle's Provenance, so
   * that nothing still names them). No-op when the resource moved on meanwhile.
   */
  async rewriteInPlace(
    ctx: TenantContext,
    version: FhirVersion,
    key: string,
    vid: number,
    resource: Record<string, unknown>,
  ): Promise<void> {
    const idx = searchIndexOf(version, resource, this.settings);
    await this.writes.rewriteInPlace(ctx, key, vid, { json: JSON.stringify(resource), idx });
  }

  /**
   * The Provenance of a bundle's writes (https://hl7.org/fhir/R4/provenance.html: `target` 1..*):
   * one listing every resource the bundle created or updated, or two when it did both
   * (`activity` is 0..1), with the history rows its writes left to it (`complete`). Recorded after
   * the bundle's last write; a crash before it leaves current versions without a history row or
   * a Provenance, which readers serve from the current document and `store check --repair` mends.
   */
  async recordProvenance(ctx: TenantContext, version: FhirVersion, bundle: BundleWrites): Promise<void> {
    const provenances: ResourceDoc[] = [];
    for (const [activity, targets] of provenanceGroups(bundle.writes)) {
      provenances.push(this.provenanceFor(ctx, version, targets, activity));
    }
    await this.storeProvenances(ctx, pendingRows(bundle.writes), provenances, bundle.claimedProvenance);
  }

  /**
   * History rows and Provenances. A Provenance whose id another user of the client holds is not
   * written, nor its history row, which would take the place of that user's row of the same key:
   * its id is claimed first, unless `claimed` (`BundleWrites.claimedProvenance`) says the
   * writer's claim holds it already.
   */
  private async storeProvenances(
    ctx: TenantContext,
    rows: readonly HistoryDoc[],
    provenances: readonly ResourceDoc[],
    claimed?: string,
  ): Promise<void> {
    const unclaimed = provenances.filter((provenance) => provenance._id !== claimed);
    const refused = unclaimed.length > 0 ? await this.writes.claimIds(ctx, unclaimed) : new Set<string>();
    const kept = provenances.filter((provenance) => !refused.has(provenance._id));
    await Promise.all([
      this.writes.insertHistory(ctx, [...rows, ...kept.map(historyOf)]),
      this.writes.insertClaimedIgnoringExisting(ctx, kept),
    ]);
  }

  /**
   * The Provenance of one or more versions written together, under the writer's user, with a
   * deterministic id (from the first target's key and version: a repair or a retry makes exactly
   * one) and `recorded` = the latest of their lastUpdated.
   */
  provenanceFor(
    ctx: TenantContext,
    version: FhirVersion,
    targets: readonly ResourceDoc[],
    activity: 'create' | 'update',
  ): ResourceDoc {
    const [first] = targets;
    const id = provenanceIdFor(first._id, first.vid);
    const recorded = new Date(Math.max(...targets.map((target) => target.lu.getTime())));
    const provenance = buildProvenance({
      version,
      id,
      targets: targets.map((target) => `${target.t}/${target.id}/_history/${target.vid}`),
      recorded: recorded.toISOString(),
      activity,
      clientId: ctx.clientId,
    });
    return this.buildDoc(asOwner(ctx, first.u), version, 'Provenance', id, 1, recorded, provenance);
  }
}

/** History rows of the writes whose row is not in yet (one claimed with its version is). */
function pendingRows(writes: readonly CompletedWrite[]): HistoryDoc[] {
  return writes.filter((w) => !w.historyWritten).map(({ doc }) => historyOf(doc));
}

/**
 * The writes that get a Provenance (creates and updates of anything but a Provenance; not
 * deletes), grouped by activity in write order: creates first, then updates.
 */
function provenanceGroups(writes: readonly CompletedWrite[]): Array<['create' | 'update', ResourceDoc[]]> {
  const groups = { create: [] as ResourceDoc[], update: [] as ResourceDoc[] };
  for (const { previous, doc } of writes) {
    if (doc.del || doc.t === 'Provenance') continue;
    groups[previous && !previous.del ? 'update' : 'create'].push(doc);
  }
  return (['create', 'update'] as const).filter((a) => groups[a].length > 0).map((a) => [a, groups[a]]);
}
