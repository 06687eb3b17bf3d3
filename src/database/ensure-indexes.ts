import type { mongo } from 'mongoose';

type Collection = mongo.Collection<any>;
type IndexDescription = mongo.IndexDescription;

/**
 * Creates the missing indexes of a collection, one at a time, skipping any whose key pattern
 * already exists under another name (several modules index the shared `resources` collection).
 * One at a time because FerretDB 1.24 closes the connection (a server-side panic) when a
 * multi-index `createIndexes` names only indexes that already exist.
 */
export async function ensureIndexes(
  collection: Collection,
  specs: readonly IndexDescription[],
): Promise<void> {
  const existing = await collection.indexes().catch(() => [] as { key: Record<string, unknown> }[]);
  const known = new Set(existing.map((i) => JSON.stringify(i.key)));
  for (const spec of specs) {
    const key = JSON.stringify(spec.key);
    if (known.has(key)) continue;
    const { key: keyPattern, ...options } = spec;
    await collection.createIndex(keyPattern, options);
    known.add(key);
  }
}
