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
import { entryIds } from '@app/testing/synthea';
import { ResourceStorage } from '../src/storage/resource-storage';

/**
 * A store created by an earlier release carries that release's indexes: at start-up the current
 * list is built and the retired ones go (each index costs every write). The references were two
 * indexes, by type `{v,c,t,idx.ref}` and across types `{v,c,idx.ref}`; one `{v,c,idx.ref,t,lu,id}`
 * now serves both (and one reference's resources newest first), and the searches that used either
 * answer the same on it. The type and system
 * history indexes lacked the page's `_id` tie-break; the purge had a history index of its own.
 */
describe('resource indexes of an earlier layout (e2e)', () => {
  let t: TestApp;
  let alice: TestUser;
  const resources = () => t.connection.collection('resources');
  const indexNames = async () => (await resources().indexes()).map((index) => index.name);

  beforeAll(async () => {
    t = await createTestApp(IDENTITY_TEST_ENV);
    alice = await createUser(t, await createClient(t));
    const auth = bearer(alice.access_token);
    await request(t.server)
      .put('/r4/Patient/ix-p')
      .set(auth)
      .send({ resourceType: 'Patient', id: 'ix-p' })
      .expect(201);
    for (const [type, id, field] of [
      ['Observation', 'ix-o', 'subject'],
      ['Condition', 'ix-c', 'subject'],
      ['Basic', 'ix-a', 'subject'],
    ]) {
      const resource: Record<string, unknown> = {
        resourceType: type,
        id,
        [field]: { reference: 'Patient/ix-p' },
      };
      if (type !== 'Condition') Object.assign(resource, { code: { text: 'x' } });
      if (type === 'Observation') resource.status = 'final';
      const res = await request(t.server).put(`/r4/${type}/${id}`).set(auth).send(resource);
      expect([res.status, res.body.issue?.[0]?.diagnostics]).toEqual([201, undefined]);
    }
  }, 60_000);
  afterAll(async () => t?.close());

  it('start-up replaces the two reference indexes of the earlier layout with the one of today', async () => {
    await resources().dropIndex('search_references');
    await resources().createIndex({ v: 1, c: 1, t: 1, 'idx.ref': 1 }, { name: 'search_ref' });
    await resources().createIndex({ v: 1, c: 1, 'idx.ref': 1 }, { name: 'search_ref_any_type' });

    await t.app.get(ResourceStorage).onModuleInit();

    const names = await indexNames();
    expect(names).toContain('search_references');
    expect(names).not.toContain('search_ref');
    expect(names).not.toContain('search_ref_any_type');
    const [index] = (await resources().indexes()).filter((i) => i.name === 'search_references');
    expect(Object.keys(index.key)).toEqual(['v', 'c', 'idx.ref', 't', 'lu', 'id']);
  });

  it('start-up builds an index again whose name it declares with another key (the references before the lastUpdated order)', async () => {
    await resources().dropIndex('search_references');
    await resources().createIndex({ v: 1, c: 1, 'idx.ref': 1, t: 1 }, { name: 'search_references' });

    await t.app.get(ResourceStorage).onModuleInit();

    const [index] = (await resources().indexes()).filter((i) => i.name === 'search_references');
    expect(Object.entries(index.key)).toEqual([
      ['v', 1],
      ['c', 1],
      ['idx.ref', 1],
      ['t', 1],
      ['lu', -1],
      ['id', 1],
    ]);
  });

  it('start-up replaces the history indexes without the _id tie-break with those holding the page order', async () => {
    const history = t.connection.collection('resource_history');
    const earlier: Array<[string, string, Record<string, 1 | -1>]> = [
      ['user_type_history_ordered', 'user_type_history', { v: 1, c: 1, u: 1, t: 1, lu: -1 }],
      ['type_history_ordered', 'type_history', { v: 1, c: 1, t: 1, lu: -1 }],
      ['user_system_history_ordered', 'user_system_history', { v: 1, c: 1, u: 1, lu: -1 }],
      ['system_history_ordered', 'system_history', { v: 1, c: 1, lu: -1 }],
    ];
    for (const [today, before, key] of earlier) {
      await history.dropIndex(today);
      await history.createIndex(key, { name: before });
    }

    await t.app.get(ResourceStorage).onModuleInit();

    const indexes = await history.indexes();
    const names = indexes.map((index) => index.name);
    for (const [today, before, key] of earlier) {
      expect(names).toContain(today);
      expect(names).not.toContain(before);
      const [index] = indexes.filter((i) => i.name === today);
      expect(Object.entries(index.key)).toEqual([...Object.entries(key), ['_id', -1]]);
    }
    const page = await request(t.server)
      .get('/r4/_history?_count=2')
      .set(bearer(alice.access_token))
      .expect(200);
    expect(page.body.entry).toHaveLength(2);
  });

  it("start-up drops the purge's own history index {v,c,u,rk}, and a purge runs without it", async () => {
    const history = t.connection.collection('resource_history');
    await history.createIndex({ v: 1, c: 1, u: 1, rk: 1 }, { name: 'user_history' });
    expect((await history.indexes()).map((index) => index.name)).toContain('user_history');

    await t.app.get(ResourceStorage).onModuleInit();

    const names = (await history.indexes()).map((index) => index.name).sort();
    expect(names).toEqual(
      [
        '_id_',
        'resource_versions',
        'system_history_ordered',
        'type_history_ordered',
        'user_system_history_ordered',
        'user_type_history_ordered',
      ].sort(),
    );
    const bob = await createUser(t, await createClient(t));
    const auth = bearer(bob.access_token);
    await request(t.server)
      .put('/r4/Basic/ix-gone')
      .set(auth)
      .send({ resourceType: 'Basic', id: 'ix-gone', code: { text: 'x' } })
      .expect(201);
    await request(t.server).delete('/r4/purge').set(auth).expect(200);
    expect(await history.countDocuments({ u: bob.service_user_id })).toBe(0);
  });

  it("stores references to this server's base relative, and start-up brings an earlier document's absolute ones to that form", async () => {
    const auth = bearer(alice.access_token);
    const base = t.settings.urls.base;
    await request(t.server).put('/r4/Patient/ix-q').set(auth).send({ resourceType: 'Patient', id: 'ix-q' });
    const observation = {
      resourceType: 'Observation',
      id: 'ix-abs',
      status: 'final',
      code: { text: 'x' },
      subject: { reference: `${base}/r4/Patient/ix-q` },
    };
    await request(t.server).put('/r4/Observation/ix-abs').set(auth).send(observation).expect(201);
    const stored = async () =>
      ((await resources().findOne({ id: 'ix-abs' }))?.idx as { ref: string[] }).ref.sort();
    // `patient` is the subject's Patient references: no entry of its own (stored-params.ts)
    expect(await stored()).toEqual(['*patient|Patient/ix-q', 'subject|Patient/ix-q']);
    const found = async (value: string) =>
      entryIds((await request(t.server).get(`/r4/Observation?subject=${value}`).set(auth).expect(200)).body);
    expect(await found('Patient/ix-q')).toEqual(['ix-abs']);
    expect(await found(`${base}/r4/Patient/ix-q`)).toEqual(['ix-abs']);

    // a document as an earlier release wrote it: the absolute form as written, the store's record gone
    const absolute = ['patient', 'subject'].map((code) => `${code}|${base}/r4/Patient/ix-q`);
    await resources().updateOne({ id: 'ix-abs' }, { $set: { 'idx.ref': absolute } });
    await t.connection.collection('store_layout').deleteMany({});
    expect(await found('Patient/ix-q')).toEqual([]);

    await t.app.get(ResourceStorage).onModuleInit();

    // extracted again, in today's layout
    expect(await stored()).toEqual(['*patient|Patient/ix-q', 'subject|Patient/ix-q']);
    expect(await found('Patient/ix-q')).toEqual(['ix-abs']);
    expect(await found(`${base}/r4/Patient/ix-q`)).toEqual(['ix-abs']);
    const record = await t.connection
      .collection('store_layout')
      .findOne({ _id: 'local-references' as never });
    expect(record?.value).toBe(base);
  });

  it('start-up adds the Patient compartment entries to documents an earlier release wrote without them', async () => {
    const auth = bearer(alice.access_token);
    await request(t.server).put('/r4/Patient/ix-m').set(auth).send({ resourceType: 'Patient', id: 'ix-m' });
    const condition = {
      resourceType: 'Condition',
      id: 'ix-mc',
      subject: { reference: 'Patient/ix-m' },
      code: { text: 'x' },
    };
    await request(t.server).put('/r4/Condition/ix-mc').set(auth).send(condition).expect(201);
    const everything = async () =>
      entryIds((await request(t.server).get('/r4/Patient/ix-m/$everything').set(auth).expect(200)).body);
    expect(await everything()).toEqual(expect.arrayContaining(['ix-m', 'ix-mc']));

    // as an earlier release stored it: no compartment entry, and the store's record of the pass gone
    await resources().updateOne({ id: 'ix-mc' }, { $pull: { 'idx.ref': '*patient|Patient/ix-m' } as never });
    await t.connection.collection('store_layout').deleteOne({ _id: 'patient-compartments' as never });
    expect(await everything()).not.toContain('ix-mc');

    await t.app.get(ResourceStorage).onModuleInit();

    expect(await everything()).toEqual(expect.arrayContaining(['ix-m', 'ix-mc']));
    const refs = ((await resources().findOne({ id: 'ix-mc' }))?.idx as { ref: string[] }).ref;
    expect(refs).toContain('*patient|Patient/ix-m');
    const record = await t.connection
      .collection('store_layout')
      .findOne({ _id: 'patient-compartments' as never });
    expect(record?.value).toBe('*patient');
  });

  it('serves a typed reference search, a compartment search and $everything', async () => {
    const auth = bearer(alice.access_token);
    const typed = await request(t.server).get('/r4/Observation?subject=Patient/ix-p').set(auth).expect(200);
    expect(entryIds(typed.body)).toEqual(['ix-o']);
    const compartment = await request(t.server).get('/r4/Patient/ix-p/Condition').set(auth).expect(200);
    expect(entryIds(compartment.body)).toEqual(['ix-c']);
    const everything = await request(t.server).get('/r4/Patient/ix-p/$everything').set(auth).expect(200);
    // besides the Provenance the store wrote for the Patient
    const types = (everything.body.entry as Array<{ resource: { resourceType: string; id: string } }>).map(
      ({ resource }) => (resource.resourceType === 'Provenance' ? 'Provenance' : resource.id),
    );
    expect(types.sort()).toEqual(['Provenance', 'ix-a', 'ix-c', 'ix-o', 'ix-p']);
  });
});
