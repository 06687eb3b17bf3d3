import type { TenantContext } from '../tenancy/tenant-context';
import type { ScopedCollection, ScopedFilter, TenantDocument } from './tenant-scope';

/**
 * The page byte budget (SEARCH_PAGE_MAX_BYTES, docs/security.md "Page byte budget"): how many of
 * a page's entries, in order, are served — those whose sizes fit within `maxBytes` together,
 * and always the first one (a page that serves nothing could never be paged past). The next page
 * starts right after the last entry served, so paging stays exact.
 */
export function entriesWithinBudget(sizes: readonly number[], maxBytes: number): number {
  let bytes = 0;
  let kept = 0;
  while (kept < sizes.length && (kept === 0 || bytes + sizes[kept] <= maxBytes)) bytes += sizes[kept++];
  return kept;
}

/**
 * Bytes of the rows a page read that it does not serve (past the budget, or the one looked at to
 * tell whether a next page exists): the engine decoded them for this request, so they are charged
 * to the client's share (TenantContext.chargeUnservedReads), as the bytes served are.
 */
export function chargeUnserved(ctx: TenantContext, sizes: readonly number[], served: number): void {
  let bytes = 0;
  for (let i = served; i < sizes.length; i++) bytes += sizes[i];
  if (bytes > 0) ctx.chargeUnservedReads?.(bytes);
}

/**
 * One page (`skip`, `limit`, sorted) of `ctx`'s documents with a `json` field, held to `maxBytes`
 * of that JSON (the rows left out are charged to the client: chargeUnserved): the engine reports each document's JSON size and returns the JSON only where it is small
 * enough that the whole reply stays within the budget; the larger ones that fit are then fetched
 * by `_id`. So a page of near-limit documents costs this process (BSON decoding on the shared
 * event loop) about `maxBytes`, not `limit` times the largest document. `cut`: fewer documents
 * were served than the query had for this page.
 */
export async function findWithinBudget<T extends TenantDocument & { json?: string | null }>(
  ctx: TenantContext,
  collection: ScopedCollection<T>,
  filter: ScopedFilter<T>,
  page: { sort: Record<string, 1 | -1>; skip: number; limit: number; maxBytes: number },
): Promise<{ docs: T[]; cut: boolean }> {
  const size = { $strLenBytes: { $ifNull: ['$json', ''] } };
  const inlineBytes = Math.floor(page.maxBytes / Math.max(1, page.limit));
  const rows = await collection
    .aggregate<T & { size: number }>(
      filter,
      [
        { $sort: page.sort },
        { $skip: page.skip },
        { $limit: page.limit },
        { $addFields: { size, json: { $cond: [{ $lte: [size, inlineBytes] }, '$json', '$$REMOVE'] } } },
      ],
      { enableUtf8Validation: false },
    )
    .toArray();
  const kept = rows.slice(
    0,
    entriesWithinBudget(
      rows.map((row) => row.size),
      page.maxBytes,
    ),
  );
  chargeUnserved(
    ctx,
    rows.map((row) => row.size),
    kept.length,
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
