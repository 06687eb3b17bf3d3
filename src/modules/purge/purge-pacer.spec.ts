import { MAX_BATCH, MIN_BATCH, PurgePacer } from './purge-pacer';

function clock(start = 0): { now: () => number; advance: (ms: number) => void } {
  let t = start;
  return { now: () => t, advance: (ms) => (t += ms) };
}

describe('PurgePacer', () => {
  it('always allows the first batch, even with no budget left, so repeats make progress', () => {
    const c = clock();
    const pacer = new PurgePacer(100, c.now);
    c.advance(500);
    expect(pacer.canStartBatch()).toBe(true);
  });

  it('stops when the next batch is not expected to fit', () => {
    const c = clock();
    const pacer = new PurgePacer(1000, c.now);
    c.advance(300);
    pacer.recordBatch(300, pacer.batchSize);
    // 300 ms with size halved → about 150 ms expected next, with head-room
    expect(pacer.canStartBatch()).toBe(true);
    c.advance(700);
    expect(pacer.canStartBatch()).toBe(false);
  });

  it('grows quick batches up to the maximum and shrinks slow ones down to the minimum', () => {
    const fast = new PurgePacer(30_000, clock().now);
    for (let i = 0; i < 20; i++) fast.recordBatch(1, fast.batchSize);
    expect(fast.batchSize).toBe(MAX_BATCH);
    const slow = new PurgePacer(200, clock().now);
    for (let i = 0; i < 20; i++) slow.recordBatch(500, slow.batchSize);
    expect(slow.batchSize).toBe(MIN_BATCH);
  });

  it('scales a short last batch up before judging it', () => {
    const pacer = new PurgePacer(1000, clock().now);
    const size = pacer.batchSize;
    // 10 items in 40 ms → 250 items would take 1000 ms: far over the 100 ms target
    pacer.recordBatch(40, 10);
    expect(pacer.batchSize).toBeLessThan(size);
  });
});
