import request from 'supertest';
import type { mongo } from 'mongoose';
import { provenanceIdFor, resourceKey } from '@app/fhir';
import {
  bearer,
  createClient,
  createTestApp,
  createUser,
  IDENTITY_TEST_ENV,
  TestApp,
  TestUser,
} from '@app/testing';

const WRITE_COLLECTIONS = new Set(['resources', 'resource_history', 'resource_ids']);

/**
 * How a transaction's writes reach the database (docs/storage.md "Write protocol"): the commands a
 * bundle of new resources sends, where its history rows and Provenance go, and that a Provenance
 * whose id another user holds is not written, nor its history row.
 */
describe('bundle writes (e2e)', () => {
  let t: TestApp;
  let alice: TestUser;
  let bob: TestUser;
  let clientId: string;
  const run = Date.now().toString(36);

  beforeAll(async () => {
    // METRICS_ENABLED turns the driver's command monitoring on (the recorder below listens to it).
    t = await createTestApp({ ...IDENTITY_TEST_ENV, METRICS_ENABLED: 'true' });
    const client = await createClient(t);
    clientId = client.client_id;
    [alice, bob] = await Promise.all([createUser(t, client), createUser(t, client)]);
  });
  afterAll(async () => t?.close());

  const postBundle = (entry: unknown[], user = alice) =>
    request(t.server)
      .post('/r4')
      .set(bearer(user.access_token))
      .set('Content-Type', 'application/fhir+json')
      .send(JSON.stringify({ resourceType: 'Bundle', type: 'transaction', entry }));
  const put = (type: string, id: string, extra: Record<string, unknown> = {}) => ({
    resource: { resourceType: type, id, ...extra },
    request: { method: 'PUT', url: `${type}/${id}` },
  });
  const key = (type: string, id: string) => resourceKey('r4', clientId, type, id);
  const db = () => t.connection.db!;

  /** `command collection` of each command on the write path's collections while `action` runs. */
  async function commandsDuring(action: () => Promise<unknown>): Promise<string[]> {
    const client = t.connection.getClient();
    const seen: string[] = [];
    const listener = (event: mongo.CommandStartedEvent) => {
      const collection = event.command[event.commandName] as unknown;
      if (typeof collection === 'string' && WRITE_COLLECTIONS.has(collection))
        seen.push(`${event.commandName} ${collection}`);
    };
    client.on('commandStarted', listener);
    try {
      await action();
    } finally {
      client.off('commandStarted', listener);
    }
    return seen.sort();
  }

  it("a bundle of new resources: their claims with its Provenance's in one insert, their insert, every history row in one insert beside its Provenance", async () => {
    const ids = [1, 2, 3].map((n) => `bw-${run}-${n}`);
    let res: request.Response | undefined;
    const commands = await commandsDuring(async () => {
      res = await postBundle(ids.map((id) => put('Patient', id))).expect(200);
    });
    expect(res!.body.entry.map((e: any) => e.response.status)).toEqual(Array(3).fill('201 Created'));
    expect(commands).toEqual([
      'insert resource_history',
      'insert resource_ids',
      'insert resources',
      'insert resources',
    ]);

    // the Provenance is named after the first create and its id was claimed with the others
    // (in the same insert: four commands)
    const provenanceKey = key('Patient', ids[0]);
    const provenanceId = provenanceIdFor(provenanceKey, 1);
    const provenance = await db()
      .collection('resources')
      .findOne({ _id: key('Provenance', provenanceId) } as never);
    expect(provenance).toMatchObject({ u: alice.service_user_id, vid: 1 });
    expect(JSON.parse(provenance!.json).target.map((r: any) => r.reference)).toEqual(
      ids.map((id) => `Patient/${id}/_history/1`),
    );
    const keys = [...ids.map((id) => key('Patient', id)), key('Provenance', provenanceId)];
    const claims = await db()
      .collection('resource_ids')
      .find({ _id: { $in: keys } } as never)
      .toArray();
    expect(claims.map((c) => [c._id, c.u]).sort()).toEqual(
      keys.map((k) => [k, alice.service_user_id]).sort(),
    );
    const rows = await db()
      .collection('resource_history')
      .find({ rk: { $in: keys } })
      .toArray();
    expect(rows.map((r) => `${r.rk as string} ${r.vid as number}`).sort()).toEqual(
      keys.map((k) => `${k} 1`).sort(),
    );

    // served as version 1 in each resource's history
    const history = await request(t.server)
      .get(`/r4/Patient/${ids[1]}/_history`)
      .set(bearer(alice.access_token))
      .expect(200);
    expect(history.body.entry.map((e: any) => e.resource.meta.versionId)).toEqual(['1']);
  });

  it('a bundle whose first entry updates: every version gets its history row and a claimed Provenance', async () => {
    const [old, fresh] = [`bw-${run}-old`, `bw-${run}-new`];
    await postBundle([put('Patient', 'bw-first-' + run), put('Patient', old)]).expect(200);
    const res = await postBundle([put('Patient', old, { gender: 'male' }), put('Patient', fresh)]).expect(
      200,
    );
    expect(res.body.entry.map((e: any) => e.response.status)).toEqual(['200 OK', '201 Created']);

    const rows = await db()
      .collection('resource_history')
      .find({ rk: { $in: [key('Patient', old), key('Patient', fresh)] } })
      .toArray();
    expect(rows.map((r) => `${r.rk as string} ${r.vid as number}`).sort()).toEqual(
      [`${key('Patient', fresh)} 1`, `${key('Patient', old)} 1`, `${key('Patient', old)} 2`].sort(),
    );
    const provenanceKeys = [
      key('Provenance', provenanceIdFor(key('Patient', fresh), 1)),
      key('Provenance', provenanceIdFor(key('Patient', old), 2)),
    ];
    const provenances = await db()
      .collection('resources')
      .find({ _id: { $in: provenanceKeys } } as never)
      .toArray();
    expect(provenances.map((p) => JSON.parse(p.json).activity.coding[0].code).sort()).toEqual([
      'CREATE',
      'UPDATE',
    ]);
    const claims = await db()
      .collection('resource_ids')
      .find({ _id: { $in: provenanceKeys } } as never)
      .toArray();
    expect(claims.map((c) => c.u)).toEqual([alice.service_user_id, alice.service_user_id]);
    const provenanceRows = await db()
      .collection('resource_history')
      .countDocuments({ rk: { $in: provenanceKeys }, vid: 1 });
    expect(provenanceRows).toBe(2);
  });

  it("a bundle whose first id another user holds: that entry is refused and the other user's Provenance id stays unclaimed by this one", async () => {
    const [taken, mine] = [`bw-${run}-bobs`, `bw-${run}-mine`];
    // bob's resource as the second entry of his bundle: no Provenance is named after it
    await postBundle([put('Patient', `bw-${run}-bob-first`), put('Patient', taken)], bob).expect(200);
    const res = await postBundle([put('Patient', taken), put('Patient', mine)]).expect(200);
    expect(res.body.entry.map((e: any) => e.response.status)).toEqual(['409 Conflict', '201 Created']);
    const claimOfBobsProvenance = await db()
      .collection('resource_ids')
      .findOne({ _id: key('Provenance', provenanceIdFor(key('Patient', taken), 1)) } as never);
    expect(claimOfBobsProvenance).toBeNull();
    const provenanceKey = key('Provenance', provenanceIdFor(key('Patient', mine), 1));
    const provenance = await db()
      .collection('resources')
      .findOne({ _id: provenanceKey } as never);
    expect(provenance?.u).toBe(alice.service_user_id);
    expect(JSON.parse(provenance!.json).target).toEqual([{ reference: `Patient/${mine}/_history/1` }]);
  });

  it("a bundle whose third id another user holds: the ids around it are claimed, the Provenance's too, the held one is refused", async () => {
    const ids = ['a', 'b', 'bobs', 'c', 'd'].map((n) => `bw-${run}-mid-${n}`);
    await postBundle([put('Patient', `bw-${run}-mid-bob-first`), put('Patient', ids[2])], bob).expect(200);
    const res = await postBundle(ids.map((id) => put('Patient', id))).expect(200);
    expect(res.body.entry.map((e: any) => e.response.status)).toEqual([
      '201 Created',
      '201 Created',
      '409 Conflict',
      '201 Created',
      '201 Created',
    ]);
    const mine = ids.filter((_, i) => i !== 2);
    const provenanceKey = key('Provenance', provenanceIdFor(key('Patient', ids[0]), 1));
    const claims = await db()
      .collection('resource_ids')
      .find({ _id: { $in: [...ids.map((id) => key('Patient', id)), provenanceKey] } } as never)
      .toArray();
    expect(claims.map((c) => [c._id, c.u]).sort()).toEqual(
      [
        ...mine.map((id) => [key('Patient', id), alice.service_user_id]),
        [key('Patient', ids[2]), bob.service_user_id],
        [provenanceKey, alice.service_user_id],
      ].sort(),
    );
    const provenance = await db()
      .collection('resources')
      .findOne({ _id: provenanceKey } as never);
    expect(provenance?.u).toBe(alice.service_user_id);
    expect(JSON.parse(provenance!.json).target.map((r: any) => r.reference)).toEqual(
      mine.map((id) => `Patient/${id}/_history/1`),
    );
    const rows = await db()
      .collection('resource_history')
      .countDocuments({ rk: { $in: [...mine.map((id) => key('Patient', id)), provenanceKey] } });
    expect(rows).toBe(5);
  });

  it("a Provenance id another user holds: the bundle's resources are stored, that user's Provenance and its history row stay his", async () => {
    const id = `bw-${run}-taken`;
    const provenanceId = provenanceIdFor(key('Patient', id), 1);
    const bobs = {
      resourceType: 'Provenance',
      id: provenanceId,
      target: [{ reference: 'Patient/somebody' }],
      recorded: '2026-01-01T00:00:00Z',
      agent: [{ who: { display: 'bob' } }],
    };
    await request(t.server)
      .put(`/r4/Provenance/${provenanceId}`)
      .set(bearer(bob.access_token))
      .set('Content-Type', 'application/fhir+json')
      .send(JSON.stringify(bobs))
      .expect(201);
    const bobsRow = await db()
      .collection('resource_history')
      .findOne({ rk: key('Provenance', provenanceId), vid: 1 });

    const res = await postBundle([put('Patient', id), put('Patient', `${id}-2`)]).expect(200);
    expect(res.body.entry.map((e: any) => e.response.status)).toEqual(['201 Created', '201 Created']);
    const stored = await db()
      .collection('resources')
      .find({ _id: key('Provenance', provenanceId) } as never)
      .toArray();
    expect(stored.map((p) => p.u)).toEqual([bob.service_user_id]);
    const row = await db()
      .collection('resource_history')
      .findOne({ rk: key('Provenance', provenanceId), vid: 1 });
    expect(row).toEqual(bobsRow);
    expect(row!.u).toBe(bob.service_user_id);
    // the resources' own history rows are in
    const rows = await db()
      .collection('resource_history')
      .countDocuments({ rk: { $in: [key('Patient', id), key('Patient', `${id}-2`)] } });
    expect(rows).toBe(2);
  });
});
