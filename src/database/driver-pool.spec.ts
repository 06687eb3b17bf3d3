import { driverPoolOptions } from './driver-pool';

describe('driverPoolOptions', () => {
  it('sizes the pool from the admission lanes: two connections per admitted request, plus room for work outside the lanes', () => {
    const big = driverPoolOptions({ serverMaxConcurrentReads: 80, serverMaxConcurrentWrites: 40 });
    const bigger = driverPoolOptions({ serverMaxConcurrentReads: 160, serverMaxConcurrentWrites: 40 });
    expect(big.maxPoolSize).toBeGreaterThanOrEqual(2 * 120);
    expect(bigger.maxPoolSize - big.maxPoolSize).toBe(2 * 80);
  });

  it('keeps at least 50 for work outside the lanes that fans out, however small the lanes', () => {
    expect(driverPoolOptions({ serverMaxConcurrentReads: 8, serverMaxConcurrentWrites: 4 }).maxPoolSize).toBe(
      50,
    );
    expect(driverPoolOptions({ serverMaxConcurrentReads: 1, serverMaxConcurrentWrites: 1 }).maxPoolSize).toBe(
      50,
    );
  });

  it('keeps no idle connection for good: none opened ahead of need, an unused one closed after a minute', () => {
    expect(driverPoolOptions({ serverMaxConcurrentReads: 8, serverMaxConcurrentWrites: 4 })).toMatchObject({
      minPoolSize: 0,
      maxIdleTimeMS: 60_000,
    });
  });
});
