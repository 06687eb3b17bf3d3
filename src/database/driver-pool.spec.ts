import { driverPoolOptions } from './driver-pool';

describe('driverPoolOptions', () => {
  it('sizes the pool from the admission lanes: two connections per admitted request, plus room for work outside the lanes', () => {
    const small = driverPoolOptions({ serverMaxConcurrentReads: 8, serverMaxConcurrentWrites: 4 });
    const big = driverPoolOptions({ serverMaxConcurrentReads: 80, serverMaxConcurrentWrites: 40 });
    expect(small.maxPoolSize).toBeGreaterThanOrEqual(2 * 12);
    expect(big.maxPoolSize - small.maxPoolSize).toBe(2 * (120 - 12));
  });

  it('keeps no idle connection for good: none opened ahead of need, an unused one closed after a minute', () => {
    expect(driverPoolOptions({ serverMaxConcurrentReads: 8, serverMaxConcurrentWrites: 4 })).toMatchObject({
      minPoolSize: 0,
      maxIdleTimeMS: 60_000,
    });
  });
});
