import type { TenantContext } from '../tenancy/tenant-context';
import type { ScopedCollection, ScopedFilter, TenantDocument } from './tenant-scope';

/**
 * The page byte budget (SEARCH_PAGE_MAX_BYTES, docs/security.md "Page byte budget"), the one rule
 * of every page that serves resource JSON (search matches, their `_include`s, history, `$everything`):
 * how many of a page's entries, in order, are served — those whose sizes fit within `maxBytes`
 * together, and always the first one (a page that serves nothing could never be paged past; an
 * addition to a page that already holds its matches is no such page: `firstAlways: false`). Only
 * the first `candidates` entries may be served; the others were looked at (the one read to tell
 * whether a next page exists). Bytes read and not served are charged to the client's share
 * (TenantContext.chargeUnservedReads), as the bytes served are: the engine decoded them for this
 * request. The next page starts right after the last entry served, so paging stays exact.
 */
export function servedWithinBudget(
  ctx: TenantContext,
  sizes: readonly number[],
  maxBytes: number,
  options: { candidates?: number; firstAlways?: boolean } = {},
): number {
  const candidates = Math.min(options.candidates ?? sizes.length, sizes.length);
  let bytes = 0;
  let kept = 0;
  while (kept < candidates && (kept === 0 || bytes + sizes[kept] <= maxBytes)) bytes += sizes[kept++];
  if (options.firstAlways === false && kept === 1 && sizes[0] > maxBytes) kept = 0;
  let unserved = 0;
  for (let i = kept; i < sizes.length; i++) unserved += sizes[i];
  if (unserved > 0) ctx.chargeUnservedReads?.(unserved);
  return kept;
}

/** The engine-side size of a document's `json`, for the projections of budgeted pages. */
export const JSON_SIZE = { $strLenBytes: { $ifNull: ['$json', ''] } } as const;

/**
 * A budgeted page's projection of `json`: inline only when small enough that `rows` of that size
 * stay within `maxBytes`; the larger ones that fit are fetched by `_id` afterwards. So a page of
 * near-limit documents costs this process (BSON decoding on the shared event loop) about
 * `maxBytes`, not `rows` times the largest document.
 */
export function inlineJsonUpTo(maxBytes: number, rows: number): object {
  return { $cond: [{ $lte: [JSON_SIZE, Math.floor(maxBytes / Math.max(1, rows))] }, '$json', '$$REMOVE'] };
}

/**
 * One page (`skip`, `limit`, sorted) of `ctx`'s documents with a `json` field, held to `maxBytes`
 * of that JSON (servedWithinBudget; JSON inline or fetched by `_id`: inlineJsonUpTo). `cut`: fewer documents
 * were served than the query had for this page.
 */
export async function findWithinBudget<T extends TenantDocument & { json?: string | null }>(
  ctx: TenantContext,
  collection: ScopedCollection<T>,
  filter: ScopedFilter<T>,
  page: { sort: Record<string, 1 | -1>; skip: number; limit: number; maxBytes: number; hint?: string },
): Promise<{ docs: T[]; cut: boolean }> {
  // `$limit` of skip + limit before `$skip` (as a search page): DocumentDB keeps only that many in a
  // top-N sort, or stops there reading an index in order; a `$skip` first makes it sort every row.
  const stages: object[] = [{ $sort: page.sort }, { $limit: page.skip + page.limit }];
  if (page.skip > 0) stages.push({ $skip: page.skip });
  stages.push({ $addFields: { size: JSON_SIZE, json: inlineJsonUpTo(page.maxBytes, page.limit) } });
  const rows = await collection.aggregateRows<T & { size: number }>(filter, stages, page.limit, {
    enableUtf8Validation: false,
    ...(page.hint === undefined ? {} : { hint: page.hint }),
  });
  const kept = rows.slice(
    0,
    servedWithinBudget(
      ctx,
      rows.map((row) => row.size),
      page.maxBytes,
    ),
  );
  const missing = kept.filter((row) => row.json === undefined).map((row) => row._id);
  const fetched = new Map<string, string | null>();
  if (missing.length > 0) {
    const found = await collection
      .find(
        { ...filter, _id: { $in: missing } },
        {
          projection: { json: 1 },
          enableUtf8Validation: false,
        },
      )
      .toArray();
    for (const doc of found) fetched.set(String(doc._id), (doc as { json?: string | null }).json ?? null);
  }
  const docs = kept.map(({ size: _size, ...row }) => {
    const doc = row as unknown as T;
    return doc.json === undefined ? { ...doc, json: fetched.get(doc._id) ?? null } : doc;
  });
  return { docs, cut: kept.length < rows.length };
}
