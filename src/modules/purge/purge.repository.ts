import { Injectable } from '@nestjs/common';
import { InjectModel } from '@nestjs/mongoose';
import type { FilterQuery, Model } from 'mongoose';
import type { FhirVersion } from '@app/fhir';
import { TenantContext, tenantFilter } from '../../tenancy/tenant-context';
import { groupBy } from './group-by';
import type { KeyRange } from './key-ranges';
import {
  USER_TYPE_INDEX,
  PURGE_HISTORY_MODEL,
  PURGE_RESOURCE_MODEL,
  PurgeHistoryDoc,
  PurgeResourceDoc,
} from './purge.schemas';

/** What a purge matches, on the current version of each resource (SPEC §4.7). */
export interface PurgeSelection {
  version: FhirVersion;
  types: readonly string[] | null;
  before: Date | null;
}

/** A current document found by a batch: its key, type and number of versions (its versionId). */
export interface ResourceKeyRef {
  key: string;
  type: string;
  versions: number;
}

export interface TypeCount {
  type: string;
  resources: number;
  versions: number;
}

export interface HistoryRowRef {
  id: string;
  resourceKey: string;
  type: string;
  lastUpdated: Date;
}

/**
 * The only code of the purge that touches the database. Every filter starts from
 * `tenantFilter(ctx)`; the removal order (current document, then its history rows) is the
 * service's, following docs/storage.md "Write protocol" 4.
 */
@Injectable()
export class PurgeRepository {
  constructor(
    @InjectModel(PURGE_RESOURCE_MODEL) private readonly resources: Model<PurgeResourceDoc>,
    @InjectModel(PURGE_HISTORY_MODEL) private readonly history: Model<PurgeHistoryDoc>,
  ) {}

  /**
   * Up to `limit` matching current documents. No sort and no resume key: every key found is
   * removed before the next call (or no longer matches), so the next read starts where it stops.
   */
  async matchingKeys(
    ctx: TenantContext,
    selection: PurgeSelection,
    limit: number,
  ): Promise<ResourceKeyRef[]> {
    const docs = await this.resources
      .find(this.currentFilter(ctx, selection), { _id: 1, t: 1, vid: 1 })
      // DocumentDB's planner cannot tell the selectivity of the (v, c, t, …) search indexes
      .hint(USER_TYPE_INDEX)
      .limit(limit)
      .lean<Array<Pick<PurgeResourceDoc, '_id' | 't' | 'vid'>>>()
      .exec();
    return docs.map((doc) => ({ key: doc._id, type: doc.t, versions: doc.vid }));
  }

  /**
   * Deletes the current documents of `refs` that still match (a concurrent update may have moved
   * one past `_before`). Returns the keys that are gone, whose history may now be removed.
   */
  async removeCurrent(
    ctx: TenantContext,
    selection: PurgeSelection,
    refs: ReadonlyArray<Pick<ResourceKeyRef, 'key' | 'type'>>,
  ): Promise<Set<string>> {
    const filter = this.currentFilter(ctx, selection);
    const result = await this.resources.bulkWrite(
      keysByType(refs).map(([type, keys]) => ({
        deleteMany: { filter: { ...filter, t: type, _id: { $in: keys } } },
      })),
      { ordered: false },
    );
    const keys = refs.map((ref) => ref.key);
    const gone = new Set(keys);
    if (result.deletedCount !== keys.length) {
      for (const key of await this.existingKeys(ctx, selection.version, keys)) gone.delete(key);
    }
    return gone;
  }

  /**
   * Removes every history row of the given (already removed) resources; returns how many. One
   * statement: in the (v, c, u, rk) index the key follows the tenant prefix, so each key is a probe.
   */
  async removeHistoryOf(
    ctx: TenantContext,
    version: FhirVersion,
    refs: ReadonlyArray<Pick<ResourceKeyRef, 'key'>>,
  ): Promise<number> {
    const result = await this.history
      .deleteMany({ ...tenantFilter(ctx), v: version, rk: { $in: refs.map((ref) => ref.key) } })
      .exec();
    return result.deletedCount;
  }

  /** The types of the selection, or else every type the user holds in this version. */
  async typesOf(ctx: TenantContext, selection: PurgeSelection): Promise<string[]> {
    if (selection.types) return [...selection.types].sort();
    const types: string[] = await this.resources
      .distinct('t', { ...tenantFilter(ctx), v: selection.version })
      .exec();
    return types.sort();
  }

  /** Deletes every current document of the user of `type` with a key in `range`; returns how many. */
  async removeCurrentInRange(
    ctx: TenantContext,
    version: FhirVersion,
    type: string,
    range: KeyRange,
  ): Promise<number> {
    const result = await this.resources
      .deleteMany({ ...tenantFilter(ctx), v: version, t: type, _id: { $gte: range.from, $lt: range.to } })
      .exec();
    return result.deletedCount;
  }

  /** Some current document of the user of `type` in `range` (any: the engine's first), or null. */
  async someKeyInRange(
    ctx: TenantContext,
    version: FhirVersion,
    type: string,
    range: KeyRange,
  ): Promise<string | null> {
    const doc = await this.resources
      .findOne(
        { ...tenantFilter(ctx), v: version, t: type, _id: { $gte: range.from, $lt: range.to } },
        { _id: 1 },
      )
      .lean<Pick<PurgeResourceDoc, '_id'>>()
      .exec();
    return doc?._id ?? null;
  }

  /** Current documents of the user of `type` in `range` (written after its range delete). */
  async keysInRange(
    ctx: TenantContext,
    version: FhirVersion,
    type: string,
    range: KeyRange,
  ): Promise<string[]> {
    const docs = await this.resources
      .find(
        { ...tenantFilter(ctx), v: version, t: type, _id: { $gte: range.from, $lt: range.to } },
        { _id: 1 },
      )
      .lean<Array<Pick<PurgeResourceDoc, '_id'>>>()
      .exec();
    return docs.map((doc) => doc._id);
  }

  /** Deletes the user's history rows of the resources in `range` but `except`; returns how many. */
  async removeHistoryInRange(
    ctx: TenantContext,
    version: FhirVersion,
    range: KeyRange,
    except: readonly string[],
  ): Promise<number> {
    const rk: FilterQuery<PurgeHistoryDoc>['rk'] = { $gte: range.from, $lt: range.to };
    if (except.length > 0) rk.$nin = [...except];
    const result = await this.history.deleteMany({ ...tenantFilter(ctx), v: version, rk }).exec();
    return result.deletedCount;
  }

  /** Counts per type of what a purge would remove: resources and their versions (dry-run). */
  async countMatchingByType(
    ctx: TenantContext,
    selection: PurgeSelection,
    maxTimeMs: number,
  ): Promise<TypeCount[]> {
    const rows = await this.resources
      .aggregate<{ _id: string; resources: number; versions: number }>([
        { $match: this.currentFilter(ctx, selection) },
        { $group: { _id: '$t', resources: { $sum: 1 }, versions: { $sum: '$vid' } } },
      ])
      // its own deadline (the purge budget), in place of the connection's DB_TIMEOUT_MS
      .option({ maxTimeMS: maxTimeMs, timeoutMS: maxTimeMs })
      .exec();
    return rows.map((row) => ({ type: row._id, resources: row.resources, versions: row.versions }));
  }

  async countMatching(ctx: TenantContext, selection: PurgeSelection, maxTimeMs: number): Promise<number> {
    return this.resources
      .countDocuments(this.currentFilter(ctx, selection))
      .setOptions({ maxTimeMS: maxTimeMs, timeoutMS: maxTimeMs })
      .exec();
  }

  /**
   * History rows of the user in the selected types, in resource-key order after `afterKey`: the
   * candidates for leftovers of an interrupted removal (rows whose current document is gone).
   */
  async historyRowsAfter(
    ctx: TenantContext,
    selection: PurgeSelection,
    afterKey: string | null,
    limit: number,
  ): Promise<HistoryRowRef[]> {
    const filter: FilterQuery<PurgeHistoryDoc> = { ...tenantFilter(ctx), v: selection.version };
    if (selection.types) filter.t = { $in: [...selection.types] };
    if (afterKey !== null) filter.rk = { $gt: afterKey };
    const rows = await this.history
      .find(filter, { _id: 1, rk: 1, t: 1, lu: 1 })
      .sort({ rk: 1 })
      .limit(limit)
      .lean<Array<Pick<PurgeHistoryDoc, '_id' | 'rk' | 't' | 'lu'>>>()
      .exec();
    return rows.map(toHistoryRowRef);
  }

  /** Every history row of one resource (when one resource has more rows than a page). */
  async historyRowsOf(
    ctx: TenantContext,
    version: FhirVersion,
    resourceKey: string,
  ): Promise<HistoryRowRef[]> {
    const rows = await this.history
      .find({ ...tenantFilter(ctx), v: version, rk: resourceKey }, { _id: 1, rk: 1, t: 1, lu: 1 })
      .lean<Array<Pick<PurgeHistoryDoc, '_id' | 'rk' | 't' | 'lu'>>>()
      .exec();
    return rows.map(toHistoryRowRef);
  }

  /** Which of `keys` have a current document of this user. */
  async existingKeys(ctx: TenantContext, version: FhirVersion, keys: string[]): Promise<Set<string>> {
    const docs = await this.resources
      .find({ ...tenantFilter(ctx), v: version, _id: { $in: keys } }, { _id: 1 })
      .lean<Array<Pick<PurgeResourceDoc, '_id'>>>()
      .exec();
    return new Set(docs.map((doc) => doc._id));
  }

  async removeHistoryRows(ctx: TenantContext, version: FhirVersion, rowIds: string[]): Promise<number> {
    const result = await this.history
      .deleteMany({ ...tenantFilter(ctx), v: version, _id: { $in: rowIds } })
      .exec();
    return result.deletedCount;
  }

  private currentFilter(ctx: TenantContext, selection: PurgeSelection): FilterQuery<PurgeResourceDoc> {
    const filter: FilterQuery<PurgeResourceDoc> = { ...tenantFilter(ctx), v: selection.version };
    if (selection.types) filter.t = { $in: [...selection.types] };
    if (selection.before) filter.lu = { $lt: selection.before };
    return filter;
  }
}

/**
 * Keys grouped by resource type: every delete of a batch names its type. With `t` fixed, DocumentDB
 * runs `_id ∈ keys` as one probe per key in the (v, c, u, t, _id) index; without it, each key of
 * the `$in` scans all of the user's entries under (v, c, u) — measured 3.4 s for 1,000 keys of a
 * 10-patient user, 65 ms with the type (issue 13).
 */
function keysByType(refs: ReadonlyArray<Pick<ResourceKeyRef, 'key' | 'type'>>): Array<[string, string[]]> {
  return [...groupBy(refs, (ref) => ref.type)].map(([type, group]) => [type, group.map((ref) => ref.key)]);
}

function toHistoryRowRef(row: Pick<PurgeHistoryDoc, '_id' | 'rk' | 't' | 'lu'>): HistoryRowRef {
  return { id: row._id, resourceKey: row.rk, type: row.t, lastUpdated: row.lu };
}
