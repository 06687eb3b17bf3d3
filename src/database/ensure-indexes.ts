import type { mongo } from 'mongoose';

/**
 * Find options of a cursor that may legitimately outlive DB_TIMEOUT_MS (an export download, a
 * maintenance scan): the deadline applies to each batch, not to the whole iteration.
 */
export const LONG_CURSOR = { timeoutMode: 'iteration' } as const;

type Collection = mongo.Collection<any>;
type IndexDescription = mongo.IndexDescription;

/**
 * Creates the missing indexes of a collection in one `createIndexes` command, skipping any whose
 * key pattern already exists under another name (several modules index the shared `resources`
 * collection). One command, because DocumentDB queues each separate index build for its background
 * builder (~1.6 s each), while one command builds a new collection's indexes at once (~20 ms).
 * TTL indexes are declared with `expireAfterSeconds` directly: DocumentDB cannot `collMod` an
 * existing index into a TTL index.
 */
export async function ensureIndexes(
  collection: Collection,
  specs: readonly IndexDescription[],
): Promise<void> {
  const existing = await collection
    .indexes({ timeoutMS: 0 })
    .catch(() => [] as { key: Record<string, unknown> }[]);
  const known = new Set(existing.map((i) => JSON.stringify(i.key)));
  const missing: IndexDescription[] = [];
  for (const spec of specs) {
    const key = JSON.stringify(spec.key);
    if (known.has(key)) continue;
    known.add(key);
    missing.push(spec);
  }
  // An index build on a large collection may take minutes: no per-operation deadline for it.
  if (missing.length > 0) await collection.createIndexes(missing, { timeoutMS: 0 });
}
