import fc from 'fast-check';
import { bucketsOf, coveringBuckets, DATE_BUCKETS, NUMBER_BUCKETS, type BucketLayout } from './range-buckets';
import { sortableNumber } from './text-normalization';

/** True when a stored value would be a candidate of the range: one of its prefixes is in the cover. */
function candidate(value: string, cover: readonly string[], layout: BucketLayout): boolean {
  const keys = new Set(cover);
  return bucketsOf(value, layout).some((prefix) => keys.has(prefix));
}

const instant = fc
  .date({
    min: new Date('0001-01-01T00:00:00.000Z'),
    max: new Date('9999-12-31T23:59:59.999Z'),
    noInvalidDate: true,
  })
  .map((date) => date.toISOString());
const encodedNumber = fc.double({ noNaN: true, noDefaultInfinity: true }).map(sortableNumber);

describe('range buckets', () => {
  it('stores one prefix per level', () => {
    expect(bucketsOf('2010-03-05T10:00:00.000Z', DATE_BUCKETS)).toEqual([
      '2',
      '20',
      '201',
      '2010',
      '2010-03',
      '2010-03-05',
    ]);
  });

  it('covers a one-sided date range with whole buckets at the coarsest level', () => {
    const cover = coveringBuckets('2010-01-01T00:00:00.000Z', DATE_BUCKETS.ceiling, DATE_BUCKETS);
    expect(cover).toEqual([
      '201',
      ...'23456789'.split('').map((d) => `20${d}`),
      ...'123456789'.split('').map((d) => `2${d}`),
      ...'3456789'.split(''),
    ]);
    expect(coveringBuckets('2010-03-05T00:00:00.000Z', '2010-03-05T23:59:59.999Z', DATE_BUCKETS)).toEqual([
      '2010-03-05',
    ]);
    expect(coveringBuckets('2011-01-01T00:00:00.000Z', '2010-01-01T00:00:00.000Z', DATE_BUCKETS)).toEqual([]);
  });

  it('every date inside a range is a candidate; dates outside only from the edge days', () => {
    fc.assert(
      fc.property(instant, instant, instant, (a, b, x) => {
        const [lo, hi] = a <= b ? [a, b] : [b, a];
        const cover = coveringBuckets(lo, hi, DATE_BUCKETS);
        if (x >= lo && x <= hi) expect(candidate(x, cover, DATE_BUCKETS)).toBe(true);
        else if (candidate(x, cover, DATE_BUCKETS))
          expect([lo.slice(0, 10), hi.slice(0, 10)]).toContain(x.slice(0, 10));
        expect(cover.length).toBeLessThanOrEqual(200);
      }),
      { numRuns: 2000 },
    );
  });

  it('every number inside a range is a candidate', () => {
    fc.assert(
      fc.property(encodedNumber, encodedNumber, encodedNumber, (a, b, x) => {
        const [lo, hi] = a <= b ? [a, b] : [b, a];
        const cover = coveringBuckets(lo, hi, NUMBER_BUCKETS);
        if (x >= lo && x <= hi) expect(candidate(x, cover, NUMBER_BUCKETS)).toBe(true);
        else if (candidate(x, cover, NUMBER_BUCKETS))
          expect([lo.slice(0, 6), hi.slice(0, 6)]).toContain(x.slice(0, 6));
        expect(cover.length).toBeLessThanOrEqual(2 * 16 * NUMBER_BUCKETS.levels.length);
      }),
      { numRuns: 2000 },
    );
  });
});
