import { mongo } from 'mongoose';
import { createTestApp, runCliInProcess, TestApp } from '@app/testing';
import type { ShardEngine } from '../../src/storage/shard-engine';
import { SHARDED_COLLECTIONS, shardKeyOf } from '../../src/storage/shard-keys';

/** `store shard` on the cluster (docs/scaling.md): shards, is idempotent, refuses another key. */
describe('store shard on the cluster (sharded e2e)', () => {
  let t: TestApp;
  let client: mongo.MongoClient;
  const engine = process.env.TEST_SHARD_ENGINE as ShardEngine;

  beforeAll(async () => {
    t = await createTestApp();
    client = await mongo.MongoClient.connect(process.env.TEST_MONGO_URL!);
  });
  afterAll(async () => {
    await client?.close();
    await t?.close();
  });

  const shardKeys = async (dbName: string) =>
    new Map(
      (
        await client
          .db('config')
          .collection<{ _id: string; key: object }>('collections')
          .find({ _id: { $regex: `^${dbName}\\.` } })
          .toArray()
      ).map((doc) => [String(doc._id).slice(dbName.length + 1), doc.key]),
    );

  const shard = async (dbName: string) => {
    const saved = process.exitCode;
    const run = await runCliInProcess({ ...t, dbName }, ['store', 'shard']);
    const exitCode = process.exitCode;
    process.exitCode = saved;
    return { ...run, exitCode };
  };

  it('shards every store collection of a fresh database on its key, then says it is done already', async () => {
    const dbName = `${t.dbName}_fresh`;
    const first = await shard(dbName);
    expect(first.exitCode ?? 0).toBe(0);
    const report = JSON.parse(first.stdout);
    expect(report.engine).toBe(engine);
    const keys = await shardKeys(dbName);
    for (const collection of SHARDED_COLLECTIONS) {
      expect(keys.get(collection.name)).toEqual(shardKeyOf(collection, engine));
    }
    expect(report.collections.map((c: { state: string }) => c.state)).toEqual(
      SHARDED_COLLECTIONS.map(() => 'sharded'),
    );
    const again = await shard(dbName);
    expect(again.exitCode ?? 0).toBe(0);
    expect(JSON.parse(again.stdout).collections.map((c: { state: string }) => c.state)).toEqual(
      SHARDED_COLLECTIONS.map(() => 'already sharded'),
    );
    await client.db(dbName).dropDatabase();
  });

  it('refuses, changing nothing, when a collection is sharded on another key', async () => {
    const dbName = `${t.dbName}_other`;
    await client.db('admin').command({ shardCollection: `${dbName}.resource_history`, key: { c: 'hashed' } });
    const run = await shard(dbName);
    expect(run.exitCode).toBe(1);
    expect(run.stdout).toBe('');
    expect(run.stderr.trim().split('\n')).toHaveLength(1);
    expect(run.stderr).toMatch(/resource_history is sharded on \{"c":"hashed"\}/);
    expect((await shardKeys(dbName)).has('resources')).toBe(false);
    await client.db(dbName).dropDatabase();
  });

  it("the test app's own database was sharded before the app started", async () => {
    const keys = await shardKeys(t.dbName);
    for (const collection of SHARDED_COLLECTIONS) {
      expect(keys.get(collection.name)).toEqual(shardKeyOf(collection, engine));
    }
  });
});
