import { FailurePacing, PacingRefusal } from './failure-pacing';

const WINDOW_MS = 60_000;

/** A verification the test settles by hand: `finish(true)` answers a failure. */
function pendingVerification() {
  let finish!: (failed: boolean) => void;
  const answer = new Promise<boolean>((resolve) => (finish = resolve));
  return { verify: () => answer, finish };
}

const isFailure = (failed: boolean) => failed;
const settle = () => new Promise((resolve) => setImmediate(resolve));

describe('FailurePacing', () => {
  let now: number;
  let pacing: FailurePacing;
  beforeEach(() => {
    now = 1_000_000;
    pacing = new FailurePacing(WINDOW_MS, () => now, 3, 1000);
  });

  const fail = () => pacing.paced('a', () => Promise.resolve(true), isFailure);

  it('lets the free failures verify one after another without waiting', async () => {
    for (let i = 0; i < 3; i++) expect(await fail()).toBe(true);
    expect(pacing.refusalNow('a')).toEqual(new PacingRefusal(1));
  });

  it('past the free failures, refuses until the pace since the last failure is over, then verifies one', async () => {
    for (let i = 0; i < 3; i++) await fail();
    expect(await fail()).toEqual(new PacingRefusal(1));
    now += 999;
    expect(await fail()).toBeInstanceOf(PacingRefusal);
    now += 1;
    expect(await fail()).toBe(true);
    expect(await fail()).toBeInstanceOf(PacingRefusal);
  });

  it('runs at most the free failures at once; waiters are refused when those fail', async () => {
    const running = [pendingVerification(), pendingVerification(), pendingVerification()];
    const verified: number[] = [];
    const attempts = Array.from({ length: 10 }, (_, i) =>
      pacing.paced('a', () => (verified.push(i), running[i]?.verify() ?? Promise.resolve(true)), isFailure),
    );
    await settle();
    expect(verified).toEqual([0, 1, 2]);
    for (const r of running) r.finish(true);
    const answers = await Promise.all(attempts);
    expect(verified).toEqual([0, 1, 2]);
    expect(answers.slice(0, 3)).toEqual([true, true, true]);
    for (const answer of answers.slice(3)) expect(answer).toBeInstanceOf(PacingRefusal);
  });

  it('lets the waiters run once a running verification succeeds', async () => {
    const first = [pendingVerification(), pendingVerification(), pendingVerification()];
    const verified: number[] = [];
    const attempts = Array.from({ length: 5 }, (_, i) =>
      pacing.paced('a', () => (verified.push(i), first[i]?.verify() ?? Promise.resolve(false)), isFailure),
    );
    await settle();
    expect(verified).toEqual([0, 1, 2]);
    first[0].finish(false); // the right secret: room for the waiters, one after another
    await settle();
    expect(verified).toEqual([0, 1, 2, 3, 4]);
    first[1].finish(false);
    first[2].finish(false);
    expect(await Promise.all(attempts)).toEqual([false, false, false, false, false]);
  });

  it('paces each address on its own, and forgets failures a window after the last', async () => {
    for (let i = 0; i < 3; i++) await fail();
    expect(await pacing.paced('b', () => Promise.resolve(true), isFailure)).toBe(true);
    expect(pacing.refusalNow('b')).toBeUndefined();
    now += WINDOW_MS;
    expect(pacing.refusalNow('a')).toBeUndefined();
    expect(await fail()).toBe(true);
    expect(pacing.refusalNow('a')).toBeUndefined(); // one failure of a new window
  });

  it('does not count a verification that threw (the database failed) as a failure', async () => {
    for (let i = 0; i < 2; i++) await fail();
    await expect(pacing.paced('a', () => Promise.reject(new Error('down')), isFailure)).rejects.toThrow(
      'down',
    );
    expect(pacing.refusalNow('a')).toBeUndefined();
    expect(await fail()).toBe(true);
    expect(pacing.refusalNow('a')).toBeInstanceOf(PacingRefusal);
  });
});
