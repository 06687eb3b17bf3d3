import type { Conditions, ScopedCollection, TenantDocument } from './tenant-scope';

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
