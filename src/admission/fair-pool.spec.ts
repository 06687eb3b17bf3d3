import { FairPool, type PoolTurn } from './fair-pool';

/** A pool of `capacity` with a fake clock; turns handed out are recorded in order. */
function pool(capacity: number, maxQueue = 64) {
  let now = 0;
  /** Clients in flight elsewhere on the server (ClientConcurrency.othersContend). */
  const elsewhere = new Set<string>();
  const p = new FairPool(
    {
      name: 'evaluations',
      capacity,
      maxQueue,
      maxQueueSetting: 'MAX_QUEUE',
      othersContend: (key) => [...elsewhere].some((other) => other !== key),
    },
    () => now,
  );
  const started: string[] = [];
  const turns: Array<{ key: string; turn: PoolTurn }> = [];
  const enter = (key: string) =>
    p.enter(key).then((turn) => {
      started.push(key);
      turns.push({ key, turn });
      return turn;
    });
  const tick = () => new Promise((resolve) => setImmediate(resolve));
  return {
    p,
    elsewhere,
    started,
    turns,
    enter,
    tick,
    advance: (ms: number) => (now += ms),
    /** Releases the oldest running turn of `key` with `costMs`. */
    finish: (key: string, costMs: number) => {
      const at = turns.findIndex((t) => t.key === key);
      turns.splice(at, 1)[0].turn.release(costMs);
    },
  };
}

describe('FairPool', () => {
  it('runs up to capacity at once; the rest wait and start as turns are given back', async () => {
    const t = pool(2);
    void t.enter('a');
    void t.enter('a');
    void t.enter('a');
    await t.tick();
    expect(t.started).toEqual(['a', 'a']);
    expect(t.p.load).toEqual({ running: 2, waiting: 1 });
    t.finish('a', 5);
    await t.tick();
    expect(t.started).toEqual(['a', 'a', 'a']);
  });

  it("a caller with cheap work passes a costly caller's queue at the next free slot", async () => {
    const t = pool(2);
    t.elsewhere.add('cheap'); // the cheap caller is in flight (reading its resource, say)
    // the costly caller's evaluations hold their workers for the whole bound
    for (let i = 0; i < 10; i++) void t.enter('costly');
    await t.tick();
    // while another caller contends, it runs on capacity − 1: a worker stays free for the others
    expect(t.p.load).toEqual({ running: 1, waiting: 9 });
    void t.enter('cheap');
    await t.tick();
    expect(t.started.slice(-1)).toEqual(['cheap']);
    // the cheap caller's next one waits for a free slot only, not behind the costly queue
    void t.enter('cheap');
    await t.tick();
    t.finish('cheap', 3);
    await t.tick();
    expect(t.started.slice(-1)).toEqual(['cheap']);
    expect(t.p.load.waiting).toBe(9);
    t.advance(250);
    t.finish('costly', 250);
    await t.tick();
    expect(t.started.slice(-1)).toEqual(['costly']);
    expect(t.p.load).toEqual({ running: 2, waiting: 8 });
  });

  it('no caller holds every worker while another contends; alone it may use them all (work-conserving)', async () => {
    const t = pool(3);
    for (let i = 0; i < 3; i++) void t.enter('a');
    await t.tick();
    expect(t.p.load).toEqual({ running: 3, waiting: 0 }); // alone: all three
    t.elsewhere.add('b');
    t.finish('a', 250);
    void t.enter('a');
    await t.tick();
    expect(t.p.load).toEqual({ running: 2, waiting: 1 }); // b in flight elsewhere: one stays free
    void t.enter('b');
    await t.tick();
    expect(t.started.slice(-1)).toEqual(['b']);
    t.elsewhere.delete('b');
    t.finish('b', 5);
    await t.tick();
    expect(t.p.load).toEqual({ running: 2, waiting: 1 }); // b used the pool lately: it still contends
    t.advance(3_000); // its use decayed: b is gone
    void t.enter('a');
    await t.tick();
    expect(t.started.slice(-1)).toEqual(['a']); // a may take the last one again
    expect(t.p.load).toEqual({ running: 3, waiting: 1 });
  });

  it('between callers of equal running count, the least recent use goes first; use decays', async () => {
    const t = pool(1);
    void t.enter('x');
    await t.tick();
    t.finish('x', 200); // x used 200 ms
    void t.enter('y');
    await t.tick();
    void t.enter('x');
    void t.enter('y');
    await t.tick();
    t.finish('y', 10);
    await t.tick();
    expect(t.started).toEqual(['x', 'y', 'y']);
    t.advance(10_000); // ten half-lives later both are light again
    expect(t.p.useOf('x')).toBeLessThan(1);
  });

  it('a full queue refuses the newcomer 503, or makes room by refusing the heaviest queue’s newest waiter', async () => {
    const t = pool(1, 3);
    void t.enter('a');
    await t.tick();
    const waiting = [t.enter('a'), t.enter('a'), t.enter('a')];
    const refusedA = await t.enter('a').catch((e: { status: number; headers: Record<string, string> }) => e);
    expect(refusedA).toMatchObject({ status: 503, headers: { 'Retry-After': '1' } });
    // another caller's evaluation takes the place of a's newest
    void t.enter('b');
    await expect(waiting[2]).rejects.toMatchObject({ status: 503 });
    t.finish('a', 1);
    await t.tick();
    expect(t.started).toEqual(['a', 'b']);
  });
});
