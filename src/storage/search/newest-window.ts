/**
 * Newest-first pages without sorting every match (docs/storage.md "Sorted pages").
 *
 * Only on engines that do not read an index in its order (DocumentDB 0.108, the distributed kit;
 * ResourceStorage.readsIndexesInOrder says which): there a page of a search in lastUpdated
 * order (a plain type search, `_lastUpdated` ranges) fetches and sorts every match, so the first
 * page of a user's 10,000 Observations costs as much as reading all of them. A two-sided range on
 * `lu` is bounded in the lastUpdated index, though, and costs what lies inside it. So the page
 * first finds the newest window of lastUpdated that holds enough matches: it counts the matches of
 * windows reaching further back from the newest instant the search allows (1 s, then each one 32
 * times longer), and once the windows together hold `need` matches, the page query runs on that
 * window alone. Every match outside it is older than every match inside, so the page is the same.
 * The counts read only what the windows hold: a dense store answers from the first window or two.
 */

/** How far back each window reaches from the newest instant: 1 s, 32 s, 17 min, 9 h, 12 d, 1 y, 34 y. */
export const WINDOW_SPANS_MS: readonly number[] = Array.from({ length: 7 }, (_, i) => 1000 * 32 ** i);

/** An `lu` range in a filter: `{ $gte, $lt }` of one window. */
export type LuRange = { $gte: Date; $lt?: Date };

/**
 * The `lu` bounds the filter's own conditions put on every match: the latest `$lt`/`$lte` and the
 * earliest `$gt`/`$gte` of `lu` conditions at its top level or in its top-level `$and` (conditions
 * inside `$or`, e.g. `_lastUpdated=ne…`, bound nothing).
 */
export function luBounds(filter: object): { newest?: Date; oldest?: Date } {
  const conditions = [filter, ...(((filter as { $and?: unknown }).$and as unknown[] | undefined) ?? [])];
  let newest: Date | undefined;
  let oldest: Date | undefined;
  for (const condition of conditions) {
    const lu = (condition as { lu?: unknown }).lu;
    if (typeof lu !== 'object' || lu === null || lu instanceof Date) continue;
    const ops = lu as Record<string, unknown>;
    for (const op of ['$lt', '$lte'])
      if (ops[op] instanceof Date && (!newest || ops[op] < newest)) newest = ops[op];
    for (const op of ['$gt', '$gte'])
      if (ops[op] instanceof Date && (!oldest || ops[op] > oldest)) oldest = ops[op];
  }
  return { newest, oldest };
}

/** How the windows are counted: the matches within one `lu` range; all matches, up to `limit`. */
export interface WindowCounts {
  countIn(range: LuRange): Promise<number>;
  countUpTo(limit: number): Promise<number>;
}

/**
 * The start of the newest window holding at least `need` matches, or undefined when the matches
 * are fewer than `need` or the windows reach past the filter's oldest bound (or past the last
 * span) first: then the whole range is the window. When the first window falls short, one count of
 * all matches that stops at `need` tells a search of few matches (sorted whole at once, as cheap
 * as a count) from one whose matches are older than a second: only the second goes on counting
 * further windows.
 */
export async function newestWindowStart(
  need: number,
  bounds: { newest?: Date; oldest?: Date },
  now: Date,
  counts: WindowCounts,
): Promise<Date | undefined> {
  const newest = bounds.newest && bounds.newest < now ? bounds.newest : now;
  let found = 0;
  let end: Date | undefined;
  for (const span of WINDOW_SPANS_MS) {
    const start = new Date(newest.getTime() - span);
    if (bounds.oldest && start <= bounds.oldest) return undefined;
    // the first window is open towards the future: a clock set back must not hide a match
    found += await counts.countIn(end ? { $gte: start, $lt: end } : { $gte: start });
    if (found >= need) return start;
    if (!end && (await counts.countUpTo(need)) < need) return undefined;
    end = start;
  }
  return undefined;
}
