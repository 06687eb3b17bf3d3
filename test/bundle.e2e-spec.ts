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

/** docs/api.md §5 (each entry on its own, at most 20 entries): transaction and batch. */
describe('transaction and batch bundles (e2e)', () => {
  let t: TestApp;
  let alice: TestUser;
  let bob: TestUser;
  const asAlice = () => bearer(alice.access_token);

  beforeAll(async () => {
    t = await createTestApp(IDENTITY_TEST_ENV);
    const client = await createClient(t);
    [alice, bob] = await Promise.all([createUser(t, client), createUser(t, client)]);
  });
  afterAll(async () => t?.close());

  const postBundle = (bundle: unknown, headers = asAlice(), version = 'r4') =>
    request(t.server)
      .post(`/${version}`)
      .set(headers)
      .set('Content-Type', 'application/fhir+json')
      .send(JSON.stringify(bundle));
  const transaction = (entry: unknown[], type = 'transaction') => ({ resourceType: 'Bundle', type, entry });
  const countStored = (filter: Record<string, unknown>) =>
    t.connection.db!.collection('resources').countDocuments({ t: { $ne: 'Provenance' }, ...filter });
  const uuid = (n: number) => `urn:uuid:00000000-0000-4000-8000-${String(n).padStart(12, '0')}`;

  it('stores valid entries, rejects invalid ones, answers one entry per request entry in order', async () => {
    const res = await postBundle(
      transaction([
        {
          resource: { resourceType: 'Patient', gender: 'female' },
          request: { method: 'POST', url: 'Patient' },
        },
        {
          resource: { resourceType: 'Observation', code: { text: 'no status' } },
          request: { method: 'POST', url: 'Observation' },
        },
        {
          resource: { resourceType: 'Patient', id: 'tx-chosen' },
          request: { method: 'PUT', url: 'Patient/tx-chosen' },
        },
      ]),
    ).expect(200);
    expect(res.body.resourceType).toBe('Bundle');
    expect(res.body.type).toBe('transaction-response');
    expect(res.body.entry).toHaveLength(3);
    const [created, invalid, put] = res.body.entry;
    expect(created.response.status).toBe('201 Created');
    expect(created.response.location).toMatch(/^Patient\/[A-Za-z0-9\-.]+\/_history\/1$/);
    expect(created.response.etag).toBe('W/"1"');
    expect(invalid.response.status).toBe('400 Bad Request');
    expect(invalid.response.outcome.resourceType).toBe('OperationOutcome');
    expect(JSON.stringify(invalid.response.outcome)).toMatch(/status/);
    expect(put.response.status).toBe('201 Created');
    expect(put.response.location).toBe('Patient/tx-chosen/_history/1');
    await request(t.server)
      .get(`/r4/${created.response.location.replace(/\/_history\/1$/, '')}`)
      .set(asAlice())
      .expect(200);
    expect(await countStored({ t: 'Observation', u: alice.service_user_id })).toBe(0);
  });

  it('resolves urn:uuid placeholders everywhere: nested, extensions, contained', async () => {
    const res = await postBundle(
      transaction([
        {
          fullUrl: uuid(2),
          resource: {
            resourceType: 'Observation',
            status: 'final',
            code: { text: 'bp' },
            subject: { reference: uuid(1) },
            extension: [
              { url: 'http://example.org/ext', valueReference: { reference: uuid(1) } },
              // A contained resource must be referenced from its container (dom-3).
              { url: 'http://example.org/provenance', valueReference: { reference: '#p' } },
            ],
            contained: [
              {
                resourceType: 'Provenance',
                id: 'p',
                target: [{ reference: uuid(1) }],
                recorded: '2020-01-01T00:00:00Z',
                agent: [{ who: { display: 'x' } }],
              },
            ],
            hasMember: [{ reference: `${uuid(1)}/_history/1` }],
          },
          request: { method: 'POST', url: 'Observation' },
        },
        {
          fullUrl: uuid(1),
          resource: { resourceType: 'Patient' },
          request: { method: 'POST', url: 'Patient' },
        },
      ]),
    ).expect(200);
    const patientId = res.body.entry[1].response.location.split('/')[1];
    expect(res.body.entry[1].response.status).toBe('201 Created');
    const obs = await request(t.server)
      .get(`/r4/${res.body.entry[0].response.location}`)
      .set(asAlice())
      .expect(200);
    expect(obs.body.subject.reference).toBe(`Patient/${patientId}`);
    expect(obs.body.extension[0].valueReference.reference).toBe(`Patient/${patientId}`);
    expect(obs.body.contained[0].target[0].reference).toBe(`Patient/${patientId}`);
    expect(obs.body.hasMember[0].reference).toBe(`Patient/${patientId}/_history/1`);
    expect(JSON.stringify(obs.body)).not.toContain('urn:uuid');
  });

  it('takes ids from resource.id or fullUrl; a placeholder fullUrl with resource.id resolves to that id', async () => {
    const res = await postBundle(
      transaction([
        {
          fullUrl: 'http://example.org/fhir/Patient/from-fullurl',
          resource: { resourceType: 'Patient' },
          request: { method: 'POST', url: 'Patient' },
        },
        {
          fullUrl: uuid(7),
          resource: { resourceType: 'Patient', id: 'from-resource-id' },
          request: { method: 'POST', url: 'Patient' },
        },
        {
          resource: { resourceType: 'Condition', subject: { reference: uuid(7) }, code: { text: 'x' } },
          request: { method: 'POST', url: 'Condition' },
        },
        {
          fullUrl: 'Patient/bad id',
          resource: { resourceType: 'Patient' },
          request: { method: 'POST', url: 'Patient' },
        },
      ]),
    ).expect(200);
    expect(res.body.entry[0].response.location).toBe('Patient/from-fullurl/_history/1');
    expect(res.body.entry[1].response.location).toBe('Patient/from-resource-id/_history/1');
    const condition = await request(t.server)
      .get(`/r4/${res.body.entry[2].response.location}`)
      .set(asAlice())
      .expect(200);
    expect(condition.body.subject.reference).toBe('Patient/from-resource-id');
    expect(res.body.entry[3].response.status).toBe('400 Bad Request');
  });

  it('an existing id of the same user adds a version; of another user → 409 for that entry only', async () => {
    await postBundle(
      transaction([
        {
          resource: { resourceType: 'Patient', id: 'tx-again' },
          request: { method: 'POST', url: 'Patient' },
        },
      ]),
    ).expect(200);
    const again = await postBundle(
      transaction([
        {
          resource: { resourceType: 'Patient', id: 'tx-again', gender: 'male' },
          request: { method: 'POST', url: 'Patient' },
        },
      ]),
    ).expect(200);
    expect(again.body.entry[0].response.status).toBe('200 OK');
    expect(again.body.entry[0].response.location).toBe('Patient/tx-again/_history/2');
    const stolen = await postBundle(
      transaction([
        {
          resource: { resourceType: 'Patient', id: 'tx-again' },
          request: { method: 'POST', url: 'Patient' },
        },
        { resource: { resourceType: 'Patient', id: 'bob-own' }, request: { method: 'POST', url: 'Patient' } },
      ]),
      bearer(bob.access_token),
    ).expect(200);
    expect(stolen.body.entry[0].response.status).toBe('409 Conflict');
    expect(stolen.body.entry[1].response.status).toBe('201 Created');
    const read = await request(t.server).get('/r4/Patient/tx-again').set(asAlice()).expect(200);
    expect(read.body.meta.versionId).toBe('2');
  });

  const provenancesNaming = async (pattern: string) =>
    (
      await t.connection
        .db!.collection('resources')
        .find({ t: 'Provenance', u: alice.service_user_id, json: { $regex: pattern } })
        .toArray()
    ).map((p) => JSON.parse(p.json));
  const targetsOf = (provenance: any) => provenance.target.map((r: any) => r.reference).sort();

  it('stores one Provenance for the bundle, listing every resource it wrote (spec: each create has one referencing it)', async () => {
    const res = await postBundle(
      transaction(
        [1, 2, 3].map((n) => ({
          resource: { resourceType: 'Patient', id: `prov-${n}` },
          request: { method: 'POST', url: 'Patient' },
        })),
      ),
    ).expect(200);
    expect(res.body.entry.every((e: any) => e.response.status === '201 Created')).toBe(true);
    const provenances = await provenancesNaming('Patient/prov-');
    expect(provenances).toHaveLength(1);
    expect(targetsOf(provenances[0])).toEqual([
      'Patient/prov-1/_history/1',
      'Patient/prov-2/_history/1',
      'Patient/prov-3/_history/1',
    ]);
    expect(provenances[0].activity.coding[0].code).toBe('CREATE');
    // searchable by each of its targets
    for (const n of [1, 2, 3]) {
      const found = await request(t.server)
        .get(`/r4/Provenance?target=Patient/prov-${n}`)
        .set(asAlice())
        .expect(200);
      expect(found.body.entry.map((e: any) => e.resource.id)).toEqual([provenances[0].id]);
    }
  });

  it('a bundle that creates and updates (and patches) has one Provenance per activity; deletes have none', async () => {
    await postBundle(
      transaction([
        {
          resource: { resourceType: 'Patient', id: 'mix-old' },
          request: { method: 'PUT', url: 'Patient/mix-old' },
        },
        {
          resource: { resourceType: 'Patient', id: 'mix-del' },
          request: { method: 'PUT', url: 'Patient/mix-del' },
        },
        {
          resource: { resourceType: 'Patient', id: 'mix-patch' },
          request: { method: 'PUT', url: 'Patient/mix-patch' },
        },
      ]),
    ).expect(200);
    const res = await postBundle(
      transaction([
        {
          resource: { resourceType: 'Patient', id: 'mix-old', gender: 'male' },
          request: { method: 'PUT', url: 'Patient/mix-old' },
        },
        {
          resource: { resourceType: 'Patient', id: 'mix-new' },
          request: { method: 'PUT', url: 'Patient/mix-new' },
        },
        { request: { method: 'DELETE', url: 'Patient/mix-del' } },
        {
          resource: {
            resourceType: 'Binary',
            contentType: 'application/json-patch+json',
            data: Buffer.from(JSON.stringify([{ op: 'add', path: '/active', value: true }])).toString(
              'base64',
            ),
          },
          request: { method: 'PATCH', url: 'Patient/mix-patch' },
        },
      ]),
    ).expect(200);
    expect(res.body.entry.map((e: any) => e.response.status)).toEqual([
      '200 OK',
      '201 Created',
      expect.stringMatching(/^20/),
      '200 OK',
    ]);
    const provenances = await provenancesNaming(
      'Patient/mix-(old|new|del|patch)/_history/[2-9]|Patient/mix-new/_history/1',
    );
    const byActivity = Object.fromEntries(provenances.map((p) => [p.activity.coding[0].code, targetsOf(p)]));
    expect(byActivity).toEqual({
      CREATE: ['Patient/mix-new/_history/1'],
      UPDATE: ['Patient/mix-old/_history/2', 'Patient/mix-patch/_history/2'],
    });
  });

  it('more than 20 entries → 400 and nothing stored', async () => {
    const entries = Array.from({ length: 21 }, (_, i) => ({
      resource: { resourceType: 'Patient', id: `too-many-${i}` },
      request: { method: 'POST', url: 'Patient' },
    }));
    const res = await postBundle(transaction(entries)).expect(400);
    expect(res.body.resourceType).toBe('OperationOutcome');
    expect(await countStored({ id: { $regex: '^too-many-' } })).toBe(0);
    const twenty = await postBundle(transaction(entries.slice(0, 20))).expect(200);
    expect(twenty.body.entry).toHaveLength(20);
  });

  it('refuses the wrong bundle type, entries without request, and non-Bundles: nothing stored', async () => {
    const entry = {
      resource: { resourceType: 'Patient', id: 'never-stored' },
      request: { method: 'POST', url: 'Patient' },
    };
    await postBundle({ ...transaction([entry]), type: 'collection' }).expect(400);
    await postBundle({ ...transaction([entry]), type: 'searchset' }).expect(400);
    const noRequest = await postBundle(
      transaction([entry, { resource: { resourceType: 'Patient' } }]),
    ).expect(400);
    expect(noRequest.body.issue[0].diagnostics).toMatch(/entry\[1\] has no request/);
    await postBundle(
      transaction([
        entry,
        { resource: { resourceType: 'Patient' }, request: { method: 'HEAD', url: 'Patient' } },
      ]),
    ).expect(400);
    await postBundle({ resourceType: 'Patient' }).expect(400);
    await postBundle({ ...transaction([]), entry: {} }).expect(400);
    expect(await countStored({ id: 'never-stored' })).toBe(0);
    await request(t.server)
      .post('/r4')
      .set(asAlice())
      .set('Content-Type', 'application/xml')
      .send('<Bundle/>')
      .expect(415);
    await request(t.server)
      .post('/r4')
      .set(asAlice())
      .set('Content-Type', 'application/json')
      .send('{oops')
      .expect(400);
  });

  it('batch: GET and DELETE entries, PUT with ifMatch', async () => {
    await postBundle(
      transaction([
        {
          resource: { resourceType: 'Patient', id: 'batch-del' },
          request: { method: 'POST', url: 'Patient' },
        },
      ]),
    ).expect(200);
    const res = await postBundle(
      transaction(
        [
          { request: { method: 'GET', url: 'Patient/batch-del' } },
          { request: { method: 'DELETE', url: 'Patient/batch-del' } },
          { request: { method: 'GET', url: 'Patient/tx-chosen' } },
          { request: { method: 'GET', url: 'Patient?_id=tx-chosen' } },
          { request: { method: 'GET', url: 'Patient/nope-not-here' } },
          {
            resource: { resourceType: 'Patient', id: 'tx-chosen' },
            request: { method: 'PUT', url: 'Patient/tx-chosen', ifMatch: 'W/"9"' },
          },
        ],
        'batch',
      ),
    ).expect(200);
    expect(res.body.type).toBe('batch-response');
    const status = res.body.entry.map((e: any) => e.response.status);
    // deletes run first (https://hl7.org/fhir/R4/http.html#trules), so the GET of the deleted one is 410
    expect(status).toEqual([
      '410 Gone',
      '200 OK',
      '200 OK',
      '200 OK',
      '404 Not Found',
      '412 Precondition Failed',
    ]);
    expect(res.body.entry[1].response.outcome.issue[0].code).toBe('value');
    expect(res.body.entry[2].resource.id).toBe('tx-chosen');
    expect(res.body.entry[3].resource.total).toBe(1);
  });

  it('batch GET entries run the same search as GET /{v}/{type}: parameters, _count and unknown ones', async () => {
    await postBundle(
      transaction([
        {
          resource: { resourceType: 'Patient', id: 'smith-1', name: [{ family: 'Smithwick' }] },
          request: { method: 'PUT', url: 'Patient/smith-1' },
        },
        {
          resource: { resourceType: 'Patient', id: 'jones-1', name: [{ family: 'Jones' }] },
          request: { method: 'PUT', url: 'Patient/jones-1' },
        },
      ]),
    ).expect(200);
    const urls = ['Patient?family=Smithwick', 'Patient?family:exact=Jones&_count=1', 'Patient?family=Nobody'];
    const res = await postBundle(
      transaction(
        [
          ...urls.map((url) => ({ request: { method: 'GET', url } })),
          { request: { method: 'GET', url: 'Patient?not-a-param=1' } },
        ],
        'batch',
      ),
    ).expect(200);
    for (const [index, url] of urls.entries()) {
      const rest = await request(t.server).get(`/r4/${url}`).set(asAlice()).expect(200);
      const entry = res.body.entry[index];
      expect(entry.response.status).toBe('200 OK');
      expect(entry.resource.total).toBe(rest.body.total);
      expect((entry.resource.entry ?? []).map((e: any) => e.resource.id)).toEqual(
        (rest.body.entry ?? []).map((e: any) => e.resource.id),
      );
    }
    expect(res.body.entry[0].resource.entry.map((e: any) => e.resource.id)).toEqual(['smith-1']);
    expect(res.body.entry[1].resource.entry.map((e: any) => e.resource.id)).toEqual(['jones-1']);
    expect(res.body.entry[2].resource.total).toBe(0);
    // an unknown parameter is ignored and reported (lenient by default), as on the REST route
    const unknown = res.body.entry[3].resource;
    expect(unknown.entry.some((e: any) => e.resource.resourceType === 'OperationOutcome')).toBe(true);
  });

  it('Prefer: return=representation returns the stored resources', async () => {
    const res = await postBundle(
      transaction([{ resource: { resourceType: 'Patient' }, request: { method: 'POST', url: 'Patient' } }]),
    )
      .set('Prefer', 'return=representation')
      .expect(200);
    expect(res.body.entry[0].resource.meta.versionId).toBe('1');
  });

  it('works for STU3 and DSTU2 with their own validation', async () => {
    const stu3 = await postBundle(
      transaction([
        { resource: { resourceType: 'Patient', id: 'v3' }, request: { method: 'POST', url: 'Patient' } },
        { resource: { resourceType: 'Patient', bogus: true }, request: { method: 'POST', url: 'Patient' } },
      ]),
      asAlice(),
      'STU3',
    ).expect(200);
    expect(stu3.body.entry.map((e: any) => e.response.status)).toEqual(['201 Created', '400 Bad Request']);
    const dstu2 = await postBundle(
      transaction([
        {
          resource: { resourceType: 'MedicationOrder', id: 'mo', medicationCodeableConcept: { text: 'x' } },
          request: { method: 'POST', url: 'MedicationOrder' },
        },
      ]),
      asAlice(),
      'dstu2',
    ).expect(200);
    expect(dstu2.body.entry[0].response.status).toBe('201 Created');
    await request(t.server).get('/stu3/Patient/v3').set(asAlice()).expect(200);
    await request(t.server).get('/r4/Patient/v3').set(asAlice()).expect(404);
  });
});
