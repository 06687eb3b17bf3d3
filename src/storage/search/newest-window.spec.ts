import { luBounds, newestWindowStart, WINDOW_SPANS_MS, type LuRange } from './newest-window';

const NOW = new Date('2026-06-01T12:00:00.000Z');
const ago = (ms: number) => new Date(NOW.getTime() - ms);

/** Counts over stored instants, as the database would, and the ranges it was asked for. */
function store(instants: readonly Date[]) {
  const asked: Array<LuRange | { upTo: number }> = [];
  const countIn = (range: LuRange) => {
    asked.push(range);
    return Promise.resolve(
      instants.filter((at) => at >= range.$gte && (range.$lt === undefined || at < range.$lt)).length,
    );
  };
  const countUpTo = (limit: number) => {
    asked.push({ upTo: limit });
    return Promise.resolve(Math.min(limit, instants.length));
  };
  return { asked, countIn: { countIn, countUpTo } };
}

describe('newest lastUpdated window', () => {
  it('spans grow 32 times from 1 s to decades', () => {
    expect(WINDOW_SPANS_MS[0]).toBe(1000);
    expect(WINDOW_SPANS_MS[1]).toBe(32_000);
    expect(WINDOW_SPANS_MS.at(-1)! / (365 * 86_400_000)).toBeGreaterThan(30);
  });

  it('a dense store: the first window of 1 s holds the page, one count', async () => {
    const { asked, countIn } = store(Array.from({ length: 500 }, (_, i) => ago(i * 10)));
    expect(await newestWindowStart(21, {}, NOW, countIn)).toEqual(ago(1000));
    expect(asked).toEqual([{ $gte: ago(1000) }]);
  });

  it('counts windows that do not overlap and adds them up; the window reaching the need is the answer', async () => {
    // 10 in the last second, 10 more within 32 s, the rest hours ago
    const instants = [
      ...Array.from({ length: 10 }, (_, i) => ago(i * 50)),
      ...Array.from({ length: 10 }, (_, i) => ago(2000 + i * 1000)),
      ...Array.from({ length: 50 }, (_, i) => ago(3_600_000 + i)),
    ];
    const { asked, countIn } = store(instants);
    expect(await newestWindowStart(21, {}, NOW, countIn)).toEqual(ago(WINDOW_SPANS_MS[3]));
    expect(asked).toEqual([
      { $gte: ago(1000) },
      { upTo: 21 },
      { $gte: ago(32_000), $lt: ago(1000) },
      { $gte: ago(WINDOW_SPANS_MS[2]), $lt: ago(32_000) },
      { $gte: ago(WINDOW_SPANS_MS[3]), $lt: ago(WINDOW_SPANS_MS[2]) },
    ]);
  });

  it('fewer matches than the need: one window and a count that stops at the need, then the whole range', async () => {
    const { asked, countIn } = store([ago(5), ago(50_000)]);
    expect(await newestWindowStart(21, {}, NOW, countIn)).toBeUndefined();
    expect(asked).toEqual([{ $gte: ago(1000) }, { upTo: 21 }]);
  });

  it('enough matches, but spread wider than every window: no window', async () => {
    const { asked, countIn } = store(Array.from({ length: 30 }, (_, i) => ago(WINDOW_SPANS_MS.at(-1)! + i)));
    expect(await newestWindowStart(21, {}, NOW, countIn)).toBeUndefined();
    expect(asked).toHaveLength(WINDOW_SPANS_MS.length + 1);
  });

  it('starts from the search upper bound when it lies in the past, from now otherwise', async () => {
    const newest = ago(86_400_000);
    const { asked, countIn } = store(Array.from({ length: 30 }, (_, i) => new Date(newest.getTime() - i)));
    expect(await newestWindowStart(21, { newest }, NOW, countIn)).toEqual(new Date(newest.getTime() - 1000));
    expect(asked[0]).toEqual({ $gte: new Date(newest.getTime() - 1000) });
    const later = store(Array.from({ length: 30 }, (_, i) => ago(i)));
    expect(
      await newestWindowStart(21, { newest: new Date(NOW.getTime() + 60_000) }, NOW, later.countIn),
    ).toEqual(ago(1000));
  });

  it('the first window is open towards the future: matches stamped ahead of this clock count', async () => {
    const ahead = new Date(NOW.getTime() + 5000);
    const { countIn } = store(Array.from({ length: 21 }, () => ahead));
    expect(await newestWindowStart(21, {}, NOW, countIn)).toEqual(ago(1000));
  });

  it('stops once a window would reach past the search lower bound: the range is the window', async () => {
    const { asked, countIn } = store(Array.from({ length: 30 }, (_, i) => ago(40_000 + i)));
    expect(await newestWindowStart(21, { oldest: ago(60_000) }, NOW, countIn)).toBeUndefined();
    expect(asked).toEqual([{ $gte: ago(1000) }, { upTo: 21 }, { $gte: ago(32_000), $lt: ago(1000) }]);
  });

  it('reads the bounds of lu conditions at the top level and in $and, not inside $or', () => {
    const a = new Date('2020-01-01');
    const b = new Date('2021-01-01');
    const c = new Date('2022-01-01');
    expect(luBounds({ t: 'Observation' })).toEqual({ newest: undefined, oldest: undefined });
    expect(luBounds({ lu: { $gte: a, $lt: c } })).toEqual({ newest: c, oldest: a });
    expect(
      luBounds({ $and: [{ lu: { $gt: a } }, { lu: { $gte: b } }, { lu: { $lte: c } }, { lu: { $lt: b } }] }),
    ).toEqual({
      newest: b,
      oldest: b,
    });
    expect(luBounds({ $and: [{ $or: [{ lu: { $lt: a } }, { lu: { $gt: b } }] }] })).toEqual({
      newest: undefined,
      oldest: undefined,
    });
  });
});
