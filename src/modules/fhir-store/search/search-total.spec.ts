import { totalCount, totalOf } from './search-total';

describe('search totals (_total)', () => {
  it('none counts nothing, accurate counts every match, estimate and no _total count up to the cap + 1', () => {
    expect(totalCount('none', 1000)).toEqual({ count: false });
    expect(totalCount('accurate', 1000)).toEqual({ count: true });
    expect(totalCount('estimate', 1000)).toEqual({ count: true, limit: 1001 });
    expect(totalCount(undefined, 5)).toEqual({ count: true, limit: 6 });
    expect(totalCount(undefined, 0)).toEqual({ count: true, limit: 1 });
  });

  it('a capped count tells the total only below its limit', () => {
    const capped = totalCount(undefined, 5);
    expect(totalOf(0, capped)).toBe(0);
    expect(totalOf(5, capped)).toBe(5);
    expect(totalOf(6, capped)).toBeUndefined();
    expect(totalOf(0, totalCount(undefined, 0))).toBe(0);
    expect(totalOf(1, totalCount(undefined, 0))).toBeUndefined();
  });

  it('an accurate count is the total however large; none has no total', () => {
    expect(totalOf(1_000_000, totalCount('accurate', 5))).toBe(1_000_000);
    expect(totalOf(3, totalCount('none', 5))).toBeUndefined();
  });
});
