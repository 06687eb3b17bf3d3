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

/**
 * The uniqueness the write protocol relies on, on the cluster where the resource collections are
 * sharded by (client, user) and a unique index holds only within one shard-key value
 * (docs/scaling.md "Uniqueness"): ids are unique per client through the id claims, versions per
 * resource through the history row's key, conditional creates through the condition key.
 */
describe('uniqueness races on the cluster (sharded e2e)', () => {
  let t: TestApp;
  let alice: TestUser;
  let bob: TestUser;
  const json = { 'Content-Type': 'application/fhir+json' };

  beforeAll(async () => {
    // 20 concurrent writes of one user while another user of the client was just active: above
    // that user's part of the default in-flight limit, which is not under test here
    t = await createTestApp({ ...IDENTITY_TEST_ENV, CLIENT_MAX_CONCURRENT_REQUESTS: '100' });
    const client = await createClient(t);
    [alice, bob] = await Promise.all([createUser(t, client), createUser(t, client)]);
  });
  afterAll(async () => t?.close());

  const put = (user: TestUser, path: string, body: object, headers: Record<string, string> = {}) =>
    request(t.server)
      .put(path)
      .set(bearer(user.access_token))
      .set({ ...json, ...headers })
      .send(JSON.stringify(body));
  const stored = (collection: string, filter: object) =>
    t.connection.db!.collection(collection).countDocuments(filter);

  it('two users of one client racing to create the same id: one resource, the other refused', async () => {
    for (let round = 0; round < 5; round++) {
      const id = `race-${round}`;
      const [a, b] = await Promise.all([
        put(alice, `/r4/Patient/${id}`, { resourceType: 'Patient', id, gender: 'female' }),
        put(bob, `/r4/Patient/${id}`, { resourceType: 'Patient', id, gender: 'male' }),
      ]);
      expect([a.status, b.status].sort()).toEqual([201, 409]);
      const winner = a.status === 201 ? alice : bob;
      const loser = a.status === 201 ? bob : alice;
      expect(await stored('resources', { t: 'Patient', id })).toBe(1);
      expect(await stored('resources', { t: 'Patient', id, u: winner.service_user_id })).toBe(1);
      await request(t.server).get(`/r4/Patient/${id}`).set(bearer(loser.access_token)).expect(404);
      // the loser stays refused afterwards too
      await put(loser, `/r4/Patient/${id}`, { resourceType: 'Patient', id }).expect(409);
    }
  });

  it('two writers racing for the same version: one wins, the other is refused', async () => {
    await put(alice, '/r4/Patient/version-race', { resourceType: 'Patient', id: 'version-race' }).expect(201);
    const ifMatch = { 'If-Match': 'W/"1"' };
    const [a, b] = await Promise.all([
      put(
        alice,
        '/r4/Patient/version-race',
        { resourceType: 'Patient', id: 'version-race', gender: 'male' },
        ifMatch,
      ),
      put(
        alice,
        '/r4/Patient/version-race',
        { resourceType: 'Patient', id: 'version-race', gender: 'other' },
        ifMatch,
      ),
    ]);
    expect([a.status, b.status].sort()).toEqual([200, 412]);
    expect(await stored('resource_history', { t: 'Patient', id: 'version-race' })).toBe(2);
    // without If-Match every writer lands, each on a version of its own
    const writes = await Promise.all(
      Array.from({ length: 8 }, (_, n) =>
        put(alice, '/r4/Patient/version-race', {
          resourceType: 'Patient',
          id: 'version-race',
          birthDate: `2000-01-0${n + 1}`,
        }),
      ),
    );
    expect(writes.map((w) => w.status)).toEqual(writes.map(() => 200));
    const versions = writes.map((w) => w.headers.etag).sort();
    expect(new Set(versions).size).toBe(8);
    expect(await stored('resource_history', { t: 'Patient', id: 'version-race' })).toBe(10);
    const current = await request(t.server)
      .get('/r4/Patient/version-race')
      .set(bearer(alice.access_token))
      .expect(200);
    expect(current.body.meta.versionId).toBe('10');
  });

  it('20 concurrent identical conditional creates make one resource', async () => {
    const ifNoneExist = { 'If-None-Exist': 'identifier=urn:test:race|c20' };
    const body = { resourceType: 'Patient', identifier: [{ system: 'urn:test:race', value: 'c20' }] };
    const results = await Promise.all(
      Array.from({ length: 20 }, () =>
        request(t.server)
          .post('/r4/Patient')
          .set(bearer(alice.access_token))
          .set({ ...json, ...ifNoneExist })
          .send(JSON.stringify(body)),
      ),
    );
    const statuses = results.map((r) => r.status);
    expect(statuses.filter((s) => s === 201)).toHaveLength(1);
    expect(statuses.filter((s) => s === 200)).toHaveLength(19);
    expect(new Set(results.map((r) => r.body.id)).size).toBe(1);
    expect(await stored('resources', { t: 'Patient', id: results[0].body.id })).toBe(1);
    const found = await request(t.server)
      .get('/r4/Patient?identifier=urn:test:race|c20&_summary=count')
      .set(bearer(alice.access_token))
      .expect(200);
    expect(found.body.total).toBe(1);
  });

  it('an id removed for good is free for another user of the client', async () => {
    await put(alice, '/r4/Patient/freed', { resourceType: 'Patient', id: 'freed' }).expect(201);
    await put(bob, '/r4/Patient/freed', { resourceType: 'Patient', id: 'freed' }).expect(409);
    await request(t.server).delete('/r4/purge?_type=Patient').set(bearer(alice.access_token)).expect(200);
    await put(bob, '/r4/Patient/freed', { resourceType: 'Patient', id: 'freed' }).expect(201);
    expect(await stored('resources', { t: 'Patient', id: 'freed' })).toBe(1);
    expect(
      await stored('resource_ids', { u: bob.service_user_id, _id: { $regex: '\\|Patient\\|freed$' } }),
    ).toBe(1);
  });
});
