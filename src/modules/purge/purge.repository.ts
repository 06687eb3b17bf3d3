import { Injectable } from '@nestjs/common';
import { InjectModel } from '@nestjs/mongoose';
import type { FilterQuery, Model } from 'mongoose';
import { historyKey, type FhirVersion } from '@app/fhir';
import { engineTraits } from '../../database/engine-traits';
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
   * removed before the next call (or no longer matches), and an unsorted, limited read stops early
   * on every engine, where a sorted one makes FerretDB 1.x read and sort the whole collection.
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
   * Without `_before` nothing can stop a key found by `matchingKeys` from matching (user and type
   * never change), so where only `_id` look-ups are indexed (FerretDB) the keys go one by one.
   */
  async removeCurrent(ctx: TenantContext, selection: PurgeSelection, keys: string[]): Promise<Set<string>> {
    const byId = selection.before === null && (await this.onlyIdLookupsIndexed());
    const result = byId
      ? await this.deleteEachById(this.resources, keys)
      : await this.resources.deleteMany({ ...this.currentFilter(ctx, selection), _id: { $in: keys } }).exec();
    const gone = new Set(keys);
    if (result.deletedCount !== keys.length) {
      for (const key of await this.existingKeys(ctx, selection.version, keys)) gone.delete(key);
    }
    return gone;
  }

  /**
   * Removes every history row of the given (already removed) resources; returns how many.
   * Where only `_id` look-ups are indexed (FerretDB), by the rows' ids `key|1` … `key|versions`
   * (the keys come from this tenant's documents; rows outside that range, left by a crash, are
   * phase 2's leftovers); elsewhere one tenant-scoped delete by resource key.
   */
  async removeHistoryOf(
    ctx: TenantContext,
    version: FhirVersion,
    refs: ReadonlyArray<Pick<ResourceKeyRef, 'key' | 'versions'>>,
  ): Promise<number> {
    if (await this.onlyIdLookupsIndexed()) {
      const ids = refs.flatMap(({ key, versions }) =>
        Array.from({ length: versions }, (_, i) => historyKey(key, i + 1)),
      );
      return (await this.deleteEachById(this.history, ids)).deletedCount;
    }
    const result = await this.history
      .deleteMany({ ...tenantFilter(ctx), v: version, rk: { $in: refs.map((ref) => ref.key) } })
      .exec();
    return result.deletedCount;
  }

  private async onlyIdLookupsIndexed(): Promise<boolean> {
    return (await engineTraits(this.resources.db)).onlyIdLookupsIndexed;
  }

  /** One `deleteOne({_id})` per id in one unordered bulk write: each an index search on FerretDB. */
  private async deleteEachById<T>(
    model: Model<T>,
    ids: readonly string[],
  ): Promise<{ deletedCount: number }> {
    if (ids.length === 0) return { deletedCount: 0 };
    const result = await model.bulkWrite(
      ids.map((_id) => ({ deleteOne: { filter: { _id } } })),
      { ordered: false },
    );
    return { deletedCount: result.deletedCount };
  }

  /**
   * Counts per type of what a purge would remove: resources and their versions (dry-run). Summed
   * here from a key-only scan: FerretDB 1.x answers 0 for `$sum` over a field in `$group`.
   */
  async countMatchingByType(
    ctx: TenantContext,
    selection: PurgeSelection,
    maxTimeMs: number,
  ): Promise<TypeCount[]> {
    const counts = new Map<string, TypeCount>();
    const cursor = this.resources
      .find(this.currentFilter(ctx, selection), { _id: 0, t: 1, vid: 1 })
      .maxTimeMS(maxTimeMs)
      .batchSize(5000)
      .lean<Pick<PurgeResourceDoc, 't' | 'vid'>>()
      .cursor();
    for await (const doc of cursor) {
      const count = counts.get(doc.t) ?? { type: doc.t, resources: 0, versions: 0 };
      count.resources += 1;
      count.versions += doc.vid;
      counts.set(doc.t, count);
    }
    return [...counts.values()];
  }

  async countMatching(ctx: TenantContext, selection: PurgeSelection, maxTimeMs: number): Promise<number> {
    return this.resources.countDocuments(this.currentFilter(ctx, selection)).maxTimeMS(maxTimeMs).exec();
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
