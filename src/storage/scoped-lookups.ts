import type { ResourceDoc } from './documents';
import { USER_TYPE_INDEX } from './indexes';
import type { Conditions, ScopedCollection, ScopedFilter, TenantDocument } from './tenant-scope';

/** Stored documents are read without their search index entries: large, and never served. */
export const WITHOUT_INDEX = { idx: 0 } as const;

/** One document by `_id` in a tenant's collection (`also`: further conditions), without its index entries. */
export function findScoped<T extends TenantDocument>(
  collection: ScopedCollection<T>,
  id: string,
  also: Conditions<T> = {},
): Promise<T | null> {
  return collection.findOne(collection.where({ _id: id } as Conditions<T>, also), {
    projection: WITHOUT_INDEX,
  });
}

/** `findScoped` for many ids in one `$in` query; missing ones are left out, order of `ids` kept. */
export async function byIds<T extends TenantDocument>(
  collection: ScopedCollection<T>,
  ids: readonly string[],
  also: Conditions<T> = {},
): Promise<T[]> {
  if (ids.length === 0) return [];
  const docs = await collection
    .find(collection.where({ _id: { $in: [...ids] } } as Conditions<T>, also), { projection: WITHOUT_INDEX })
    .toArray();
  const byId = new Map(docs.map((d) => [d._id, d]));
  return ids.map((id) => byId.get(id)).filter((d): d is T => d !== undefined);
}

/**
 * Up to `limit` current resources of a user matching `filter`, as key, type and version count
 * only (what a removal needs), in no particular order.
 */
/** A current document found by a batch: its key, type and number of versions (its versionId). */
export interface ResourceKeyRef {
  key: string;
  type: string;
  versions: number;
}

export async function matchingResourceKeys(
  resources: ScopedCollection<ResourceDoc>,
  filter: ScopedFilter<ResourceDoc>,
  limit: number,
): Promise<ResourceKeyRef[]> {
  const docs = await resources
    .find(filter, {
      projection: { _id: 1, t: 1, vid: 1 },
      // DocumentDB's planner cannot tell the selectivity of the (v, c, t, …) search indexes
      hint: USER_TYPE_INDEX,
      limit,
    })
    .toArray();
  return docs.map((doc) => ({ key: doc._id, type: doc.t, versions: doc.vid }));
}
