import { ownDocumentDbForSuite } from '@app/testing/own-documentdb';

/** Polls `check` until it gives a value (or `waitMs` passes: then the test fails with `what`). */
async function until<T>(what: string, check: () => Promise<T | undefined>, waitMs = 90_000): Promise<T> {
  const deadline = Date.now() + waitMs;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`not within ${waitMs} ms: ${what}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

/**
 * The embedded engine bounds the life of the gateway's PostgreSQL backends
 * (src/database/gateway-backend-recycling.ts, docs/memory.md): a backend older than the bound is
 * replaced while the load goes on, without failing a request, and backends left idle are closed.
 * Its own DocumentDB with bounds of seconds instead of minutes.
 */
describe('embedded DocumentDB: gateway backends are recycled (e2e)', () => {
  const own = ownDocumentDbForSuite('fhir-recycle-', { maxAgeSeconds: 3, everySeconds: 1, idleSeconds: 10 });

  it('replaces every backend older than the bound while reads and writes keep coming; none of them fails', async () => {
    const docs = own.client.db('recycling').collection<{ n: number }>('docs');
    await docs.insertOne({ n: 0 });
    const failures: string[] = [];
    let served = 0;
    let stop = false;
    const workers = Array.from({ length: 3 }, async () => {
      while (!stop) {
        try {
          expect(await docs.findOne({ n: 0 })).toMatchObject({ n: 0 });
          await docs.insertOne({ n: 1 });
          served++;
        } catch (error) {
          failures.push((error as Error).message);
        }
      }
    });
    try {
      const first = await until('the gateway opened backends', async () => {
        const backends = await own.db.gatewayBackends();
        return backends.length > 0 ? backends : undefined;
      });
      const servedBefore = served;
      await until('the first backends were replaced', async () => {
        const now = await own.db.gatewayBackends();
        return first.every((old) => !now.some((b) => b.pid === old.pid)) ? true : undefined;
      });
      // the load went on meanwhile, on new backends (polled: with a bound of 3 s the job may be
      // replacing the newest ones too at the instant of a single look)
      expect(served).toBeGreaterThan(servedBefore);
      await until('new backends serve the load', async () => {
        const now = await own.db.gatewayBackends();
        return now.some((b) => !first.some((old) => old.pid === b.pid)) ? true : undefined;
      });
    } finally {
      stop = true;
      await Promise.all(workers);
    }
    expect(failures).toEqual([]);
  }, 180_000);

  it('keeps the backend of an open cursor: a read of several batches fetched slowly gets all of them', async () => {
    const rows = own.client.db('recycling').collection<{ _id: number; pad: string }>('rows');
    await rows.insertMany(Array.from({ length: 300 }, (_, i) => ({ _id: i, pad: 'p'.repeat(100) })));
    // A cursor of three batches with a limit (a purge's batch of keys is one): the gateway pins it
    // to the backend of its first page (without a limit it continues statelessly on any backend).
    const cursor = rows.find({}, { limit: 300, batchSize: 100 });
    const seen: number[] = [];
    for (let i = 0; i < 100; i++) seen.push((await cursor.next())!._id);
    // The backend is past the bound (3 s) and idle through several runs of the job (every 1 s).
    await new Promise((r) => setTimeout(r, 6000));
    for await (const row of cursor) seen.push(row._id);
    expect(seen).toHaveLength(300);
  }, 60_000);

  it('closes the backends once they are left idle', async () => {
    await until('no backend left', async () =>
      (await own.db.gatewayBackends()).length === 0 ? true : undefined,
    );
    // and opens new ones when requests come again
    expect(await own.client.db('recycling').collection('docs').countDocuments({ n: 0 })).toBe(1);
  }, 120_000);
});
