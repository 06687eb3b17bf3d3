/**
 * Range look-ups as equality look-ups (docs/storage.md, "Search index"). DocumentDB bounds an index
 * scan on a multikey field only for equality, `$in` and a one-sided range: a two-sided range
 * (`$elemMatch: {$gte, $lt}` included) and a `$regex` read every entry under the equality prefix
 * (`v`, `c`, `t`), i.e. every date of every resource of that type of the client (measured on the
 * kit: 100,000 documents, a ten-row range read 9,200 buffers, 350 ms; `$in` of six keys read 41).
 *
 * So each fixed-width encoded value (an ISO-8601 instant, a `sortableNumber`) is also stored as its
 * prefixes at a few lengths (`bucketsOf`), and a range [lo, hi] becomes the few prefixes that cover
 * it (`coveringBuckets`): whole buckets inside the range plus the partly covered edge buckets at the
 * finest length. `{idx.bkt: {$in: cover}}` is a bounded index scan on MongoDB and DocumentDB alike;
 * it may return a few candidates from the edge buckets, which the exact per-element test of
 * range-regex.ts (applied to the fetched documents) removes.
 */

export interface BucketLayout {
  /** Prefix lengths stored, ascending; the last is the finest bucket. */
  levels: readonly number[];
  /** Characters a position may hold (positions holding another character are fixed separators). */
  alphabet: string;
  /** The smallest and largest encoded value: position by position, what a bucket's values start at and end with. */
  floor: string;
  ceiling: string;
}

/** ISO instants `YYYY-MM-DDTHH:mm:ss.sssZ`: millennium … year, month, day. */
export const DATE_BUCKETS: BucketLayout = {
  levels: [1, 2, 3, 4, 7, 10],
  alphabet: '0123456789',
  floor: '0000-01-01T00:00:00.000Z',
  ceiling: '9999-12-31T23:59:59.999Z',
};

/** `sortableNumber` hex: sign and exponent in the first three digits, then the leading mantissa. */
export const NUMBER_BUCKETS: BucketLayout = {
  levels: [1, 2, 3, 4, 5, 6],
  alphabet: '0123456789abcdef',
  floor: '0000000000000000',
  ceiling: 'ffffffffffffffff',
};

/** The stored prefixes of one encoded value. */
export function bucketsOf(value: string, layout: BucketLayout): string[] {
  return layout.levels.map((length) => value.slice(0, length));
}

/** Every segment value between `from` and `to` (inclusive, same length), separators kept fixed. */
function segmentsBetween(from: string, to: string, alphabet: string): string[] {
  let partial = [''];
  for (let i = 0; i < from.length; i++) {
    const choices = alphabet.includes(from[i]) ? alphabet : from[i];
    const next: string[] = [];
    for (const head of partial) for (const ch of choices) next.push(head + ch);
    partial = next;
  }
  return partial.filter((segment) => segment >= from && segment <= to);
}

/**
 * Prefixes (of the layout's lengths) whose buckets together hold every value in [lo, hi] (open
 * ends: the layout's floor and ceiling). Empty when lo > hi. Whole buckets are taken at the
 * coarsest length that fits, so a one-sided range needs a few dozen keys at most.
 */
export function coveringBuckets(lo: string, hi: string, layout: BucketLayout): string[] {
  if (lo > hi) return [];
  const keys: string[] = [];
  const last = layout.levels.length - 1;
  const visit = (prefix: string, level: number): void => {
    const start = level === 0 ? 0 : layout.levels[level - 1];
    const end = layout.levels[level];
    const lowest = lo.startsWith(prefix) ? lo.slice(start, end) : layout.floor.slice(start, end);
    const highest = hi.startsWith(prefix) ? hi.slice(start, end) : layout.ceiling.slice(start, end);
    for (const segment of segmentsBetween(lowest, highest, layout.alphabet)) {
      const bucket = prefix + segment;
      const whole = bucket + layout.floor.slice(end) >= lo && bucket + layout.ceiling.slice(end) <= hi;
      if (whole || level === last) keys.push(bucket);
      else visit(bucket, level + 1);
    }
  };
  visit('', 0);
  return keys;
}
