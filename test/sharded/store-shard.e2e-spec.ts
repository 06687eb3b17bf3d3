import { mongo } from 'mongoose';
import request from 'supertest';
import {
  bearer,
  createClient,
  createTestApp,
  createUser,
  IDENTITY_TEST_ENV,
  runCliInProcess,
  TestApp,
  TestUser,
} from '@app/testing';
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

  it('shards a database in use: existing resources get their id claims, the app goes on serving', async () => {
    const engineSaved = process.env.TEST_SHARD_ENGINE;
    delete process.env.TEST_SHARD_ENGINE;
    const plain = await createTestApp(IDENTITY_TEST_ENV).finally(
      () => (process.env.TEST_SHARD_ENGINE = engineSaved),
    );
    try {
      const owner = await createClient(plain);
      const [alice, bob] = await Promise.all([createUser(plain, owner), createUser(plain, owner)]);
      const put = (user: TestUser, id: string) =>
        request(plain.server)
          .put(`/r4/Patient/${id}`)
          .set(bearer(user.access_token))
          .set('Content-Type', 'application/fhir+json')
          .send(JSON.stringify({ resourceType: 'Patient', id }));
      await put(alice, 'before-1').expect(201);
      await put(alice, 'before-2').expect(201);
      const db = plain.connection.db!;
      expect(await shardKeys(plain.dbName)).toEqual(new Map());
      // as written before claims existed
      await db.collection('resource_ids').deleteMany({});
      const current = await db.collection('resources').countDocuments({});
      const run = await shard(plain.dbName);
      expect(run.exitCode ?? 0).toBe(0);
      expect(JSON.parse(run.stdout).claimsAdded).toBe(current);
      const keys = await shardKeys(plain.dbName);
      for (const collection of SHARDED_COLLECTIONS) {
        expect(keys.get(collection.name)).toEqual(shardKeyOf(collection, engine));
      }
      expect(await db.collection('resources').countDocuments({})).toBe(current);
      await request(plain.server).get('/r4/Patient/before-1').set(bearer(alice.access_token)).expect(200);
      await put(bob, 'before-2').expect(409);
      await put(bob, 'after-1').expect(201);
      await put(alice, 'after-1').expect(409);
    } finally {
      await plain.close();
    }
  });

  it("the test app's own database was sharded before the app started", async () => {
    const keys = await shardKeys(t.dbName);
    for (const collection of SHARDED_COLLECTIONS) {
      expect(keys.get(collection.name)).toEqual(shardKeyOf(collection, engine));
    }
  });
});
