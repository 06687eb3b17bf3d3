import { createTestApp, runCliInProcess, TestApp } from '@app/testing';

/**
 * `store shard` on the engine of `npm test` (the single-node DocumentDB, or a standalone mongod):
 * neither can spread collections over shards, so the command refuses in one line, exit code 1, and
 * changes nothing. The sharded path is tested on the cluster (test/sharded/store-shard.e2e-spec.ts).
 */
describe('store shard on an engine that cannot shard (e2e)', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(async () => t?.close());

  it('refuses with a one-line reason and exit code 1', async () => {
    const saved = process.exitCode;
    const run = await runCliInProcess(t, ['store', 'shard']);
    const exitCode = process.exitCode;
    process.exitCode = saved;
    expect(exitCode).toBe(1);
    expect(run.stdout).toBe('');
    const lines = run.stderr.trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^store shard: refused: .*(single node cannot shard|not a sharded cluster)/);
    const sharded = await t.connection
      .getClient()
      .db('config')
      .collection('collections')
      .countDocuments({ _id: { $regex: `^${t.dbName}\\.` } } as object);
    expect(sharded).toBe(0);
  });
});
