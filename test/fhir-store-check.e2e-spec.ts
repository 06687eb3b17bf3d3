import request from 'supertest';
import {
  bearer,
  createClient,
  createTestApp,
  createUser,
  IDENTITY_TEST_ENV,
  TestApp,
  TestUser,
} from '@app/testing';
import { StoreCheckService } from '../src/modules/fhir-store/store-check.service';

/**
 * Crash safety (docs/storage.md): the states a process killed between the write steps leaves behind
 * (docs/storage.md), made by hand, then what readers see and what `store check --repair` mends.
 */
describe('store check and crash states (e2e)', () => {
  let t: TestApp;
  let alice: TestUser;
  const asAlice = () => bearer(alice.access_token);
  const resources = () => t.connection.db!.collection<any>('resources');
  const history = () => t.connection.db!.collection<any>('resource_history');
  const check = (repair: boolean) => t.app.get(StoreCheckService).check(repair);
  const create = async (id: string) =>
    request(t.server)
      .put(`/r4/Patient/${id}`)
      .set(asAlice())
      .set('Content-Type', 'application/fhir+json')
      .send(JSON.stringify({ resourceType: 'Patient', id, gender: 'female' }))
      .expect(201);

  beforeAll(async () => {
    t = await createTestApp(IDENTITY_TEST_ENV);
    alice = await createUser(t, await createClient(t));
  });
  afterAll(async () => t?.close());

  it('a clean store has nothing to report', async () => {
    await create('clean');
    const report = await check(false);
    expect(report).toMatchObject({ missingHistory: 0, orphanHistory: 0, missingProvenance: 0 });
    expect(report.resources).toBeGreaterThanOrEqual(2);
  });

  it('crash after the current write, before history: readers see the version; repair copies the row', async () => {
    await create('no-history');
    await history().deleteOne({ id: 'no-history', t: 'Patient' });
    const hist = await request(t.server).get('/r4/Patient/no-history/_history').set(asAlice()).expect(200);
    expect(hist.body.total).toBe(1);
    await request(t.server).get('/r4/Patient/no-history/_history/1').set(asAlice()).expect(200);
    expect((await check(false)).missingHistory).toBe(1);
    expect((await check(true)).missingHistory).toBe(1);
    expect((await check(false)).missingHistory).toBe(0);
    expect(await history().countDocuments({ id: 'no-history', t: 'Patient' })).toBe(1);
  });

  it('crash in a removal (current gone, history left): readers see 404; repair deletes the rows', async () => {
    await create('half-removed');
    await resources().deleteOne({ id: 'half-removed', t: 'Patient' });
    await request(t.server).get('/r4/Patient/half-removed').set(asAlice()).expect(404);
    await request(t.server).get('/r4/Patient/half-removed/_history').set(asAlice()).expect(404);
    expect((await check(false)).orphanHistory).toBe(1);
    await check(true);
    expect(await history().countDocuments({ id: 'half-removed', t: 'Patient' })).toBe(0);
    // the id is free again, and its new life starts at version 1
    const again = await create('half-removed');
    expect(again.body.meta.versionId).toBe('1');
  });

  it('crash before the Provenance: repair creates exactly one, with the deterministic id', async () => {
    await create('no-provenance');
    const target = 'Patient/no-provenance/_history/1';
    const provenance = await resources().findOne({ t: 'Provenance', json: { $regex: target } });
    expect(provenance).not.toBeNull();
    await resources().deleteOne({ _id: provenance._id });
    await history().deleteOne({ rk: provenance._id });
    expect((await check(false)).missingProvenance).toBe(1);
    await check(true);
    await check(true);
    const repaired = await resources()
      .find({ t: 'Provenance', json: { $regex: target } })
      .toArray();
    expect(repaired).toHaveLength(1);
    expect(repaired[0]._id).toBe(provenance._id);
    expect(repaired[0].u).toBe(alice.service_user_id);
    expect((await check(false)).missingProvenance).toBe(0);
  });

  it("a bundle's one Provenance covers every version it lists; a crash before it: repair gives each one", async () => {
    const entry = (id: string) => ({
      resource: { resourceType: 'Patient', id },
      request: { method: 'PUT', url: `Patient/${id}` },
    });
    await request(t.server)
      .post('/r4')
      .set(asAlice())
      .set('Content-Type', 'application/fhir+json')
      .send(
        JSON.stringify({
          resourceType: 'Bundle',
          type: 'transaction',
          entry: ['b-1', 'b-2', 'b-3'].map(entry),
        }),
      )
      .expect(200);
    const bundleProvenance = await resources().findOne({ t: 'Provenance', json: { $regex: 'Patient/b-2/' } });
    expect(JSON.parse(bundleProvenance.json).target).toHaveLength(3);
    expect((await check(false)).missingProvenance).toBe(0);
    await resources().deleteOne({ _id: bundleProvenance._id });
    await history().deleteOne({ rk: bundleProvenance._id });
    expect((await check(false)).missingProvenance).toBe(3);
    await check(true);
    await check(true);
    for (const id of ['b-1', 'b-2', 'b-3']) {
      const repaired = await resources()
        .find({ t: 'Provenance', json: { $regex: `Patient/${id}/_history/1` } })
        .toArray();
      expect(repaired).toHaveLength(1);
    }
    expect((await check(false)).missingProvenance).toBe(0);
  });

  it('a version claimed by a writer that died is rolled forward by the next writer, nothing lost', async () => {
    const created = await create('abandoned-claim');
    const key = (await resources().findOne({ id: 'abandoned-claim', t: 'Patient' }))._id;
    const longAgo = new Date(Date.now() - 120_000);
    await resources().updateOne({ _id: key }, { $set: { lu: longAgo } });
    const claimed = {
      ...created.body,
      gender: 'male',
      meta: { versionId: '2', lastUpdated: new Date(Date.now() - 60_000).toISOString() },
    };
    await history().insertOne({
      _id: `${key}|2`,
      rk: key,
      v: 'r4',
      c: (await resources().findOne({ _id: key })).c,
      u: alice.service_user_id,
      t: 'Patient',
      id: 'abandoned-claim',
      vid: 2,
      lu: new Date(Date.now() - 60_000),
      del: false,
      json: JSON.stringify(claimed),
    });
    // readers do not see the half-written version
    const before = await request(t.server).get('/r4/Patient/abandoned-claim').set(asAlice()).expect(200);
    expect(before.body.meta.versionId).toBe('1');
    const hist = await request(t.server)
      .get('/r4/Patient/abandoned-claim/_history')
      .set(asAlice())
      .expect(200);
    expect(hist.body.total).toBe(1);
    const res = await request(t.server)
      .put('/r4/Patient/abandoned-claim')
      .set(asAlice())
      .set('Content-Type', 'application/fhir+json')
      .send(JSON.stringify({ resourceType: 'Patient', id: 'abandoned-claim', gender: 'other' }))
      .expect(200);
    expect(res.body.meta.versionId).toBe('3');
    const v2 = await request(t.server)
      .get('/r4/Patient/abandoned-claim/_history/2')
      .set(asAlice())
      .expect(200);
    expect(v2.body.gender).toBe('male');
  });
});
