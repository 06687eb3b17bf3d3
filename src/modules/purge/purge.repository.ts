import { Injectable } from '@nestjs/common';
import { InjectModel } from '@nestjs/mongoose';
import type { FilterQuery, Model } from 'mongoose';
import type { FhirVersion } from '@app/fhir';
import { TenantContext, tenantFilter } from '../../tenancy/tenant-context';
import {
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
      .limit(limit)
      .lean<Array<Pick<PurgeResourceDoc, '_id' | 't' | 'vid'>>>()
      .exec();
    return docs.map((doc) => ({ key: doc._id, type: doc.t, versions: doc.vid }));
  }

  /**
   * Deletes the current documents of `keys` that still match (a concurrent update may have moved
   * one past `_before`). Returns the keys that are gone, whose history may now be removed.
   */
  async removeCurrent(ctx: TenantContext, selection: PurgeSelection, keys: string[]): Promise<Set<string>> {
    const result = await this.resources
      .deleteMany({ ...this.currentFilter(ctx, selection), _id: { $in: keys } })
      .exec();
    const gone = new Set(keys);
    if (result.deletedCount !== keys.length) {
      for (const key of await this.existingKeys(ctx, selection.version, keys)) gone.delete(key);
    }
    return gone;
  }

  /** Removes every history row of the given (already removed) resources; returns how many. */
  async removeHistoryOf(
    ctx: TenantContext,
    version: FhirVersion,
    refs: ReadonlyArray<Pick<ResourceKeyRef, 'key' | 'versions'>>,
  ): Promise<number> {
    const result = await this.history
      .deleteMany({ ...tenantFilter(ctx), v: version, rk: { $in: refs.map((ref) => ref.key) } })
      .exec();
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

function toHistoryRowRef(row: Pick<PurgeHistoryDoc, '_id' | 'rk' | 't' | 'lu'>): HistoryRowRef {
  return { id: row._id, resourceKey: row.rk, type: row.t, lastUpdated: row.lu };
}
