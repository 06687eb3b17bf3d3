import request from 'supertest';
import {
  bearer,
  clientHeaders,
  createAppWithUsers,
  createClient,
  createUser,
  IDENTITY_TEST_ENV,
  TestApp,
  TestClient,
  TestUser,
  untilAdmitted,
} from '@app/testing';

/** docs/api.md §7, §5–7, §12, §14 for single resources: create, read, update, history, deletes. */
describe('FHIR store (e2e)', () => {
  let t: TestApp;
  let client: TestClient;
  let alice: TestUser;
  let bob: TestUser;
  let mallory: TestUser;
  const asAlice = () => bearer(alice.access_token);
  const patient = (extra: Record<string, unknown> = {}) => ({
    resourceType: 'Patient',
    name: [{ family: 'Chalmers', given: ['Peter'] }],
    gender: 'male',
    ...extra,
  });

  beforeAll(async () => {
    // 50 concurrent writes of one client: above the default in-flight limit (16), and past its
    // share of database time while another client was active a moment before (the tests before
    // it use other clients): neither is under test here (security-*.e2e-spec.ts), and the burst's
    // database time would refuse this file's next requests for a while
    ({
      t,
      client,
      users: [alice, bob],
      strangers: [mallory],
    } = await createAppWithUsers(
      { users: 2, strangers: 1 },
      { ...IDENTITY_TEST_ENV, CLIENT_MAX_CONCURRENT_REQUESTS: '100', CLIENT_DATABASE_MS_PER_SECOND: '0' },
    ));
  });
  afterAll(async () => t?.close());

  const post = (path: string, body: unknown, headers = asAlice()) =>
    request(t.server)
      .post(path)
      .set(headers)
      .set('Content-Type', 'application/fhir+json')
      .send(JSON.stringify(body));
  const put = (path: string, body: unknown, headers = asAlice()) =>
    request(t.server)
      .put(path)
      .set(headers)
      .set('Content-Type', 'application/fhir+json')
      .send(JSON.stringify(body));

  describe('create', () => {
    it('assigns an id, versionId 1 and lastUpdated; answers 201 with Location and ETag', async () => {
      const res = await post('/r4/Patient', patient()).expect(201);
      expect(res.headers['content-type']).toBe('application/fhir+json; charset=utf-8');
      expect(res.body.id).toMatch(/^[A-Za-z0-9\-.]{1,64}$/);
      expect(res.body.meta.versionId).toBe('1');
      expect(new Date(res.body.meta.lastUpdated).toISOString()).toBe(res.body.meta.lastUpdated);
      expect(res.headers.etag).toBe('W/"1"');
      expect(res.headers.location).toBe(`${t.settings.urls.base}/r4/Patient/${res.body.id}/_history/1`);
      const read = await request(t.server).get(`/r4/Patient/${res.body.id}`).set(asAlice()).expect(200);
      expect(read.body).toEqual(res.body);
      expect(read.headers.etag).toBe('W/"1"');
      expect(read.headers['last-modified']).toBe(new Date(res.body.meta.lastUpdated).toUTCString());
    });

    it('creates a Provenance naming the versioned target, the activity and the client', async () => {
      const created = await post('/r4/Observation', {
        resourceType: 'Observation',
        status: 'final',
        code: { text: 'weight' },
      }).expect(201);
      const search = await request(t.server).get('/r4/Provenance?_count=100').set(asAlice()).expect(200);
      const provenances = search.body.entry.map((e: any) => e.resource);
      const mine = provenances.find(
        (p: any) => p.target[0].reference === `Observation/${created.body.id}/_history/1`,
      );
      expect(mine).toBeDefined();
      expect(mine.activity.coding[0].code).toBe('CREATE');
      expect(mine.agent[0].who.identifier.value).toBe(client.client_id);
      expect(typeof mine.recorded).toBe('string');
      // a Provenance does not get a Provenance of its own
      expect(provenances.filter((p: any) => p.target[0].reference.startsWith('Provenance/'))).toEqual([]);
    });

    it('keeps a client-supplied id; posting it again by the same user adds a version', async () => {
      const first = await post('/r4/Patient', patient({ id: 'alice-own-1' })).expect(201);
      expect(first.body.id).toBe('alice-own-1');
      const second = await post('/r4/Patient', patient({ id: 'alice-own-1', gender: 'female' }));
      expect(second.status).toBe(200);
      expect(second.body.meta.versionId).toBe('2');
      expect(second.body.gender).toBe('female');
    });

    it('refuses an id owned by another user of the client with 409, and stores nothing', async () => {
      await post('/r4/Patient', patient({ id: 'owned-by-alice' })).expect(201);
      const res = await post(
        '/r4/Patient',
        patient({ id: 'owned-by-alice', gender: 'other' }),
        bearer(bob.access_token),
      );
      expect(res.status).toBe(409);
      expect(res.body.resourceType).toBe('OperationOutcome');
      const read = await request(t.server).get('/r4/Patient/owned-by-alice').set(asAlice()).expect(200);
      expect(read.body.meta.versionId).toBe('1');
      await request(t.server).get('/r4/Patient/owned-by-alice').set(bearer(bob.access_token)).expect(404);
    });

    it('the same id in another client is another resource', async () => {
      await post('/r4/Patient', patient({ id: 'shared-id' })).expect(201);
      const res = await post(
        '/r4/Patient',
        patient({ id: 'shared-id' }),
        bearer(mallory.access_token),
      ).expect(201);
      expect(res.body.meta.versionId).toBe('1');
    });

    it('answers 400 with every validation issue in one OperationOutcome', async () => {
      const res = await post('/r4/Observation', {
        resourceType: 'Observation',
        code: { text: 'x' },
        bogus: 1,
        valueString: 'a',
        valueBoolean: true,
      }).expect(400);
      expect(res.body.resourceType).toBe('OperationOutcome');
      expect(res.body.issue.length).toBeGreaterThanOrEqual(3);
      const paths = res.body.issue.flatMap((i: any) => i.expression ?? []);
      expect(paths.join(' ')).toMatch(/status/);
      expect(paths.join(' ')).toMatch(/bogus/);
    });

    it('refuses a resourceType differing from the URL, an unknown type (404) and a bad id', async () => {
      await post('/r4/Patient', { resourceType: 'Observation', status: 'final', code: { text: 'x' } }).expect(
        400,
      );
      const unknown = await post('/r4/Nonsense', { resourceType: 'Nonsense' }).expect(404);
      expect(unknown.body.issue[0].code).toBe('not-found');
      await post('/r4/Patient', patient({ id: 'bad id!' })).expect(400);
      await post('/r4/Patient', patient({ id: 'x'.repeat(65) })).expect(400);
    });

    it('bad input never 500: malformed JSON, wrong content type, non-object body, XML', async () => {
      await request(t.server)
        .post('/r4/Patient')
        .set(asAlice())
        .set('Content-Type', 'application/fhir+json')
        .send('{"resourceType":')
        .expect(400);
      const xml = await request(t.server)
        .post('/r4/Patient')
        .set(asAlice())
        .set('Content-Type', 'application/fhir+xml')
        .send('<Patient xmlns="http://hl7.org/fhir"/>')
        .expect(415);
      expect(xml.body.resourceType).toBe('OperationOutcome');
      await request(t.server)
        .post('/r4/Patient')
        .set(asAlice())
        .set('Content-Type', 'text/plain')
        .send('hi')
        .expect(415);
      await post('/r4/Patient', [patient()]).expect(400);
      await post('/r4/Patient', 'just a string').expect(400);
    });

    it('a body over BODY_LIMIT → 413 OperationOutcome', async () => {
      const big = patient({
        text: {
          status: 'generated',
          div: `<div xmlns="http://www.w3.org/1999/xhtml">${'x'.repeat(6 * 1024 * 1024)}</div>`,
        },
      });
      const res = await post('/r4/Patient', big);
      expect(res.status).toBe(413);
      expect(res.body.resourceType).toBe('OperationOutcome');
    });

    it('accepts application/json in and answers application/json when asked', async () => {
      const res = await request(t.server)
        .post('/r4/Patient')
        .set(asAlice())
        .set('Content-Type', 'application/json')
        .set('Accept', 'application/json')
        .send(patient())
        .expect(201);
      expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
    });

    it('writes need one user: x-service-user-id client may only read', async () => {
      const res = await post('/r4/Patient', patient(), clientHeaders(client, 'client'));
      expect(res.status).toBeGreaterThanOrEqual(400);
      expect(res.status).toBeLessThan(500);
      expect(res.body.resourceType).toBe('OperationOutcome');
    });

    it('client headers with one user create under that user', async () => {
      const res = await post(
        '/r4/Patient',
        patient({ id: 'via-headers' }),
        clientHeaders(client, alice.service_user_id),
      );
      expect(res.status).toBe(201);
      await request(t.server).get('/r4/Patient/via-headers').set(asAlice()).expect(200);
    });

    it('needs credentials', async () => {
      const res = await post('/r4/Patient', patient(), {});
      expect(res.status).toBe(401);
      expect(res.body.resourceType).toBe('OperationOutcome');
    });
  });

  describe('versions and content negotiation', () => {
    it('serves R4, STU3 and DSTU2 as separate stores, upper-case segments too', async () => {
      await post('/R4/Patient', patient({ id: 'multi-version' })).expect(201);
      await request(t.server).get('/r4/Patient/multi-version').set(asAlice()).expect(200);
      await request(t.server).get('/stu3/Patient/multi-version').set(asAlice()).expect(404);
      await post('/STU3/Patient', patient({ id: 'multi-version' })).expect(201);
      const dstu2Name = [{ family: ['Chalmers'], given: ['Peter'] }]; // DSTU2 HumanName.family repeats
      await post('/DSTU2/Patient', patient({ id: 'multi-version', name: dstu2Name })).expect(201);
      const dstu2 = await request(t.server).get('/dstu2/Patient/multi-version').set(asAlice()).expect(200);
      expect(dstu2.body.meta.versionId).toBe('1');
      await request(t.server).get('/r5/Patient/multi-version').set(asAlice()).expect(404);
    });

    it('DSTU2 has MedicationOrder, R4 does not', async () => {
      const order = { resourceType: 'MedicationOrder', medicationCodeableConcept: { text: 'aspirin' } };
      await post('/dstu2/MedicationOrder', order).expect(201);
      await post('/r4/MedicationOrder', { resourceType: 'MedicationOrder' }).expect(404);
    });

    it('_pretty indents, _format=json is accepted, XML asked for → 406', async () => {
      const created = await post('/r4/Patient', patient()).expect(201);
      const pretty = await request(t.server)
        .get(`/r4/Patient/${created.body.id}?_pretty=true`)
        .set(asAlice())
        .expect(200);
      expect(pretty.text).toContain('\n  "resourceType"');
      await request(t.server).get(`/r4/Patient/${created.body.id}?_format=json`).set(asAlice()).expect(200);
      const xml = await request(t.server)
        .get(`/r4/Patient/${created.body.id}?_format=xml`)
        .set(asAlice())
        .expect(406);
      expect(xml.body.resourceType).toBe('OperationOutcome');
      await request(t.server)
        .get(`/r4/Patient/${created.body.id}`)
        .set(asAlice())
        .set('Accept', 'application/fhir+xml')
        .expect(406);
    });

    it('GET /{v}/metadata is a CapabilityStatement of what is implemented', async () => {
      const r4 = await request(t.server).get('/r4/metadata').expect(200);
      expect(r4.body.resourceType).toBe('CapabilityStatement');
      expect(r4.body.fhirVersion).toBe('4.0.1');
      const patientEntry = r4.body.rest[0].resource.find((r: any) => r.type === 'Patient');
      expect(patientEntry.interaction.map((i: any) => i.code)).toEqual(
        expect.arrayContaining([
          'read',
          'vread',
          'update',
          'delete',
          'history-instance',
          'create',
          'search-type',
        ]),
      );
      expect(patientEntry.searchParam.map((p: any) => p.name)).toContain('_id');
      expect(r4.body.rest[0].interaction.map((i: any) => i.code)).toEqual([
        'transaction',
        'batch',
        'search-system',
        'history-system',
      ]);
      const dstu2 = await request(t.server).get('/DSTU2/metadata').expect(200);
      expect(dstu2.body.resourceType).toBe('Conformance');
      expect(dstu2.body.rest[0].resource.map((r: any) => r.type)).toContain('MedicationOrder');
    });
  });

  describe('update', () => {
    it('adds versions; If-Match mismatch → 412; body id must match the URL', async () => {
      const created = await post('/r4/Patient', patient()).expect(201);
      const id = created.body.id;
      const v2 = await put(`/r4/Patient/${id}`, patient({ id, gender: 'female' })).expect(200);
      expect(v2.body.meta.versionId).toBe('2');
      expect(v2.headers.etag).toBe('W/"2"');
      const stale = await put(`/r4/Patient/${id}`, patient({ id })).set('If-Match', 'W/"1"').expect(412);
      expect(stale.body.resourceType).toBe('OperationOutcome');
      await put(`/r4/Patient/${id}`, patient({ id, gender: 'male' }))
        .set('If-Match', 'W/"2"')
        .expect(200);
      const provenances = await request(t.server).get('/r4/Provenance?_count=100').set(asAlice()).expect(200);
      const forV2 = provenances.body.entry
        .map((e: any) => e.resource)
        .find((p: any) => p.target[0].reference === `Patient/${id}/_history/2`);
      expect(forV2.activity.coding[0].code).toBe('UPDATE');
      await put(`/r4/Patient/${id}`, patient({ id: 'other-id' })).expect(400);
      await put(`/r4/Patient/${id}`, patient()).expect(400);
    });

    it('creates on update with the URL id (201)', async () => {
      const res = await put('/r4/Patient/put-created', patient({ id: 'put-created' })).expect(201);
      expect(res.body.meta.versionId).toBe('1');
    });

    it('another user cannot update (409) and another client sees nothing', async () => {
      await put('/r4/Patient/alice-put', patient({ id: 'alice-put' })).expect(201);
      await put('/r4/Patient/alice-put', patient({ id: 'alice-put' }), bearer(bob.access_token)).expect(409);
      await request(t.server).get('/r4/Patient/alice-put').set(bearer(mallory.access_token)).expect(404);
      await request(t.server).delete('/r4/Patient/alice-put').set(bearer(mallory.access_token)).expect(404);
      await request(t.server).delete('/r4/Patient/alice-put').set(bearer(bob.access_token)).expect(404);
      await request(t.server).get('/r4/Patient/alice-put').set(asAlice()).expect(200);
    });

    it('50 concurrent updates produce 51 consecutive versions, none lost', async () => {
      const created = await post('/r4/Patient', patient()).expect(201);
      const id = created.body.id;
      // 50 at once from one user pile up behind its lane cap: while the app's other users were
      // active a moment ago admission may refuse some with 429 (sent again after Retry-After); every
      // write admitted must be kept, in order
      const results = await Promise.all(
        Array.from({ length: 50 }, (_, i) =>
          untilAdmitted(() =>
            put(`/r4/Patient/${id}`, patient({ id, birthDate: `19${String(i).padStart(2, '0')}-01-01` })),
          ),
        ),
      );
      expect(results.map((r) => r.status).filter((s) => s !== 200)).toEqual([]);
      const versions = results.map((r) => Number(r.body.meta.versionId)).sort((a, b) => a - b);
      expect(versions).toEqual(Array.from({ length: 50 }, (_, i) => i + 2));
      const history = await request(t.server)
        .get(`/r4/Patient/${id}/_history?_count=100`)
        .set(asAlice())
        .expect(200);
      expect(history.body.total).toBe(51);
      const vids = history.body.entry.map((e: any) => Number(e.resource.meta.versionId));
      expect(vids).toEqual(Array.from({ length: 51 }, (_, i) => 51 - i));
      const births = new Set(history.body.entry.slice(0, 50).map((e: any) => e.resource.birthDate));
      expect(births.size).toBe(50);
    });
  });

  describe('read, history and deletes (docs/api.md §7)', () => {
    it('delete adds a version; read → 410; vread of earlier versions works; history shows an OperationOutcome', async () => {
      const created = await post('/r4/Patient', patient()).expect(201);
      const id = created.body.id;
      await put(`/r4/Patient/${id}`, patient({ id, gender: 'female' })).expect(200);
      const del = await request(t.server).delete(`/r4/Patient/${id}`).set(asAlice()).expect(200);
      expect(del.body.resourceType).toBe('OperationOutcome');
      expect(del.body.issue[0].severity).toBe('information');
      expect(del.body.issue[0].code).toBe('value');
      expect(del.body.issue[0].details.text).toContain(`Patient/${id}`);
      expect(del.body.issue[0].details.text).toContain('version 3');
      const gone = await request(t.server).get(`/r4/Patient/${id}`).set(asAlice()).expect(410);
      expect(gone.body.resourceType).toBe('OperationOutcome');
      const v1 = await request(t.server).get(`/r4/Patient/${id}/_history/1`).set(asAlice()).expect(200);
      expect(v1.body.gender).toBe('male');
      await request(t.server).get(`/r4/Patient/${id}/_history/3`).set(asAlice()).expect(410);
      await request(t.server).get(`/r4/Patient/${id}/_history/4`).set(asAlice()).expect(404);
      const history = await request(t.server).get(`/r4/Patient/${id}/_history`).set(asAlice()).expect(200);
      expect(history.body.type).toBe('history');
      expect(history.body.total).toBe(3);
      expect(history.body.entry[0].resource).toBeUndefined();
      expect(history.body.entry[0].fullUrl).toBe(`${t.settings.urls.base}/r4/Patient/${id}`);
      expect(history.body.entry[0].request).toEqual({ method: 'DELETE', url: `Patient/${id}` });
      expect(history.body.entry[0].response.etag).toBe('W/"3"');
      expect(history.body.entry[0].response.outcome.issue[0].details.text).toBe(
        `Resource Patient/${id} with version 3 has been deleted.`,
      );
      expect(history.body.entry[1].request).toEqual({ method: 'PUT', url: `Patient/${id}` });
      expect(history.body.entry[1].response.status).toBe('200 OK');
      expect(history.body.entry[2].request).toEqual({ method: 'POST', url: 'Patient' });
      expect(history.body.entry[2].response.status).toBe('201 Created');
      expect(history.body.entry[1].resource.meta.versionId).toBe('2');
      expect(history.body.entry[2].resource.meta.versionId).toBe('1');
      // search stops returning it
      const search = await request(t.server).get(`/r4/Patient?_id=${id}`).set(asAlice()).expect(200);
      expect(search.body.total).toBe(0);
      // deleting again changes nothing
      const again = await request(t.server).delete(`/r4/Patient/${id}`).set(asAlice()).expect(200);
      expect(again.body.issue[0].details.text).toContain('version 3');
    });

    it('deleting every version makes the resource 404 for good', async () => {
      const created = await post('/r4/Patient', patient()).expect(201);
      const id = created.body.id;
      await put(`/r4/Patient/${id}`, patient({ id, gender: 'female' })).expect(200);
      // the current version of a live resource cannot be removed alone
      await request(t.server).delete(`/r4/Patient/${id}/_history/2`).set(asAlice()).expect(409);
      const removed1 = await request(t.server)
        .delete(`/r4/Patient/${id}/_history/1`)
        .set(asAlice())
        .expect(200);
      expect(removed1.body.issue[0].details.text).toContain('version 1');
      await request(t.server).get(`/r4/Patient/${id}/_history/1`).set(asAlice()).expect(404);
      const history = await request(t.server).get(`/r4/Patient/${id}/_history`).set(asAlice()).expect(200);
      expect(history.body.entry[1].resource).toBeUndefined();
      expect(history.body.entry[1].response.outcome.issue[0].details.text).toMatch(/Version 1 .* deleted/);
      await request(t.server).get(`/r4/Patient/${id}`).set(asAlice()).expect(200);
      await request(t.server).delete(`/r4/Patient/${id}`).set(asAlice()).expect(200);
      await request(t.server).delete(`/r4/Patient/${id}/_history/1`).set(asAlice()).expect(404);
      await request(t.server).delete(`/r4/Patient/${id}/_history/2`).set(asAlice()).expect(200);
      await request(t.server).get(`/r4/Patient/${id}`).set(asAlice()).expect(410);
      await request(t.server).delete(`/r4/Patient/${id}/_history/3`).set(asAlice()).expect(200);
      const read = await request(t.server).get(`/r4/Patient/${id}`).set(asAlice()).expect(404);
      expect(read.body.resourceType).toBe('OperationOutcome');
      await request(t.server).get(`/r4/Patient/${id}/_history`).set(asAlice()).expect(404);
      await request(t.server).get(`/r4/Patient/${id}/_history/2`).set(asAlice()).expect(404);
      const rows = await t.connection.db!.collection('resource_history').countDocuments({ id });
      expect(rows).toBe(0);
    });

    it('never existed → 404; delete of an unknown id → 404; bad version → 404', async () => {
      await request(t.server).get('/r4/Patient/never-there').set(asAlice()).expect(404);
      await request(t.server).delete('/r4/Patient/never-there').set(asAlice()).expect(404);
      const created = await post('/r4/Patient', patient()).expect(201);
      await request(t.server).get(`/r4/Patient/${created.body.id}/_history/abc`).set(asAlice()).expect(404);
      await request(t.server).get('/r4/Patient/bad$id').set(asAlice()).expect(400);
    });
  });

  describe('search and client-wide reads', () => {
    it('pages with total and links; client-wide GET sees every user of the client', async () => {
      const c = await createClient(t);
      const [u1, u2] = await Promise.all([createUser(t, c), createUser(t, c)]);
      for (let i = 0; i < 3; i++)
        await post('/r4/Condition', condition(), bearer(u1.access_token)).expect(201);
      for (let i = 0; i < 2; i++)
        await post('/r4/Condition', condition(), bearer(u2.access_token)).expect(201);
      const one = await request(t.server).get('/r4/Condition').set(bearer(u1.access_token)).expect(200);
      expect(one.body.total).toBe(3);
      const all = await request(t.server)
        .get('/r4/Condition?_count=2')
        .set(clientHeaders(c, 'client'))
        .expect(200);
      expect(all.body.total).toBe(5);
      expect(all.body.entry).toHaveLength(2);
      expect(all.body.entry[0].search.mode).toBe('match');
      const rel = Object.fromEntries(all.body.link.map((l: any) => [l.relation, l.url]));
      expect(rel.self).toBe(`${t.settings.urls.base}/r4/Condition?_count=2&_skip=0`);
      expect(rel.next).toBe(`${t.settings.urls.base}/r4/Condition?_count=2&_skip=2`);
      expect(rel.last).toBe(`${t.settings.urls.base}/r4/Condition?_count=2&_skip=4`);
      expect(rel.previous).toBeUndefined();
      const page3 = await request(t.server)
        .get('/r4/Condition?_count=2&_skip=4')
        .set(clientHeaders(c, 'client'))
        .expect(200);
      expect(page3.body.entry).toHaveLength(1);
      const lastUpdated = [...all.body.entry, ...page3.body.entry].map(
        (e: any) => e.resource.meta.lastUpdated,
      );
      expect([...lastUpdated].sort().reverse()).toEqual(lastUpdated);
      await request(t.server).get('/r4/Condition?_count=abc').set(bearer(u1.access_token)).expect(400);
      const id = one.body.entry[0].resource.id;
      const client = await request(t.server)
        .get(`/r4/Condition/${id}`)
        .set(clientHeaders(c, 'client'))
        .expect(200);
      expect(client.body.id).toBe(id);
      await request(t.server).get(`/r4/Condition/${id}`).set(bearer(u2.access_token)).expect(404);
    });
  });

  const condition = () => ({
    resourceType: 'Condition',
    subject: { reference: 'Patient/p1' },
    code: { text: 'flu' },
  });
});
