import request from 'supertest';
import { dstu2BundleViolations, validateResource } from '@app/fhir';
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
 * Every kind of Bundle the server writes under /dstu2 (searchset with an outcome entry, compartment
 * searches, $everything, history with deletes, transaction and batch responses minimal and with
 * representation, failed batch entries, Provenance searches) satisfies the DSTU2 Bundle invariants
 * bdl-1 … bdl-7 (https://hl7.org/fhir/DSTU2/bundle.html#invs) and the DSTU2 base definitions.
 */
describe('DSTU2 bundles keep bdl-1 … bdl-7 (e2e)', () => {
  let t: TestApp;
  let alice: TestUser;
  const bodies: Array<{ kind: string; body: any }> = [];

  const as = () => bearer(alice.access_token);
  const get = async (kind: string, path: string) => {
    const res = await request(t.server).get(path).set(as()).expect(200);
    bodies.push({ kind, body: res.body });
    return res.body;
  };
  const post = async (kind: string, path: string, body: unknown, status: number, prefer?: string) => {
    const req = request(t.server).post(path).set(as()).set('Content-Type', 'application/json+fhir');
    if (prefer) req.set('Prefer', prefer);
    const res = await req.send(JSON.stringify(body)).expect(status);
    if (kind) bodies.push({ kind, body: res.body });
    return res;
  };
  const patient = { resourceType: 'Patient', name: [{ family: ['Inv'], given: ['Ada'] }], gender: 'female' };

  beforeAll(async () => {
    t = await createTestApp(IDENTITY_TEST_ENV);
    const client = await createClient(t);
    alice = await createUser(t, client);

    const created = (await post('', '/dstu2/Patient', patient, 201)).body;
    const id = created.id as string;
    await post(
      '',
      '/dstu2/Observation',
      {
        resourceType: 'Observation',
        status: 'final',
        code: { text: 'weight' },
        subject: { reference: `Patient/${id}` },
      },
      201,
    );
    await request(t.server)
      .put(`/dstu2/Patient/${id}`)
      .set(as())
      .set('Content-Type', 'application/json+fhir')
      .send(JSON.stringify({ ...patient, id, gender: 'male' }))
      .expect(200);
    const doomed = (await post('', '/dstu2/Patient', patient, 201)).body.id as string;
    await request(t.server)
      .delete(`/dstu2/Patient/${doomed}`)
      .set(as())
      .expect((r) => r.status < 300);

    await get('searchset with an outcome entry', '/dstu2/Patient?nonsense=1');
    await get('searchset _summary=count', '/dstu2/Patient?_summary=count');
    await get('compartment search', `/dstu2/Patient/${id}/Observation`);
    await get('whole compartment', `/dstu2/Patient/${id}/*`);
    await get('$everything', `/dstu2/Patient/${id}/$everything`);
    await get('Provenance search', '/dstu2/Provenance?_count=50');
    await get('instance history with a delete', `/dstu2/Patient/${doomed}/_history`);
    await get('instance history', `/dstu2/Patient/${id}/_history`);
    await get('type history', '/dstu2/Patient/_history');
    await get('system history', '/dstu2/_history');
    const transaction = {
      resourceType: 'Bundle',
      type: 'transaction',
      entry: [
        {
          fullUrl: 'urn:uuid:8d3f0c1e-1111-4d8e-9a1b-000000000001',
          resource: patient,
          request: { method: 'POST', url: 'Patient' },
        },
        {
          resource: {
            resourceType: 'Observation',
            status: 'final',
            code: { text: 'height' },
            subject: { reference: 'urn:uuid:8d3f0c1e-1111-4d8e-9a1b-000000000001' },
          },
          request: { method: 'POST', url: 'Observation' },
        },
      ],
    };
    await post('transaction-response (minimal)', '/dstu2', transaction, 200);
    await post('transaction-response (representation)', '/dstu2', transaction, 200, 'return=representation');
    const batch = {
      resourceType: 'Bundle',
      type: 'batch',
      entry: [
        { resource: patient, request: { method: 'POST', url: 'Patient' } },
        { request: { method: 'GET', url: `Patient/${id}` } },
        { request: { method: 'GET', url: 'Patient?gender=male' } },
        { request: { method: 'GET', url: 'Patient/no-such-one' } },
        {
          resource: { resourceType: 'Patient', unknownElement: true },
          request: { method: 'POST', url: 'Patient' },
        },
        { request: { method: 'DELETE', url: `Patient/${doomed}` } },
      ],
    };
    await post('batch-response', '/dstu2', batch, 200);
    await post('batch-response (representation)', '/dstu2', batch, 200, 'return=representation');
  }, 120_000);
  afterAll(async () => t?.close());

  it('each bundle keeps every DSTU2 Bundle invariant and validates against DSTU2', () => {
    expect(bodies.length).toBe(14);
    for (const { kind, body } of bodies) {
      expect({ kind, resourceType: body.resourceType }).toEqual({ kind, resourceType: 'Bundle' });
      expect({ kind, violations: dstu2BundleViolations(body) }).toEqual({ kind, violations: [] });
      const errors = validateResource('dstu2', body, 'Bundle').filter((i) => i.severity === 'error');
      expect({ kind, errors }).toEqual({ kind, errors: [] });
    }
  });

  it('history: a delete is an entry with its request and neither resource nor fullUrl', () => {
    const history = bodies.find((b) => b.kind === 'instance history with a delete')!.body;
    expect(history.entry[0]).toEqual({
      request: { method: 'DELETE', url: expect.stringContaining('Patient/') },
    });
    expect(history.entry[1].fullUrl).toMatch(/\/dstu2\/Patient\//);
  });

  it('batch-response: a read has its fullUrl; a failed entry carries its OperationOutcome as the resource', () => {
    const [created, read, searched, missing, invalid, deleted] = bodies.find(
      (b) => b.kind === 'batch-response',
    )!.body.entry;
    expect(created.fullUrl !== undefined).toBe(created.resource !== undefined);
    expect(created.response.status).toMatch(/^201/);
    expect(read.fullUrl).toBe(`${t.settings.urls.base}/dstu2/Patient/${read.resource.id}`);
    expect(searched.fullUrl).toMatch(/^urn:uuid:/);
    expect(searched.resource.type).toBe('searchset');
    expect(missing.response.status).toMatch(/^404/);
    expect(missing.resource.resourceType).toBe('OperationOutcome');
    expect(missing.fullUrl).toMatch(/^urn:uuid:/);
    expect(invalid.response.status).toMatch(/^4/);
    expect(invalid.resource.resourceType).toBe('OperationOutcome');
    expect(deleted.response.status).toMatch(/^2/);
    const represented = bodies.find((b) => b.kind === 'batch-response (representation)')!.body.entry[0];
    expect(represented.fullUrl).toBe(`${t.settings.urls.base}/dstu2/Patient/${represented.resource.id}`);
  });

  // Bundles clients send: a stored Bundle (collection, document …) is held to bdl-1 … bdl-7 as
  // published; a transaction or batch may leave fullUrl out on an entry that creates a resource (it has
  // no URL yet: HAPI's DSTU2 client sends creates so), but not put a fullUrl on an entry without one.
  describe('bundles posted by clients', () => {
    const errorRules = (res: request.Response) =>
      (res.body.issue as any[])
        .filter((i) => i.severity === 'error')
        .map((i) => `${i.location?.[0]} ${i.extension?.[0]?.valueString}`);
    const collection = (entry: unknown[]) => ({ resourceType: 'Bundle', type: 'collection', entry });

    it('a stored Bundle without fullUrl on an entry is refused with bdl-6 (400), with it accepted', async () => {
      const refused = await post('', '/dstu2/Bundle', collection([{ resource: patient }]), 400);
      expect(refused.body.resourceType).toBe('OperationOutcome');
      expect(errorRules(refused)).toEqual(
        expect.arrayContaining(['Bundle.entry[0] bdl-6', 'Bundle.entry[0] bdl-7']),
      );
      await post(
        '',
        '/dstu2/Bundle',
        collection([{ fullUrl: 'urn:uuid:6b0e9b8e-2f1a-4c1e-9a55-3c5a0a7f0001', resource: patient }]),
        201,
      );
    });

    it('two entries with one fullUrl (and no versionId) break bdl-7', async () => {
      const fullUrl = 'urn:uuid:6b0e9b8e-2f1a-4c1e-9a55-3c5a0a7f0002';
      const refused = await post(
        '',
        '/dstu2/Bundle',
        collection([
          { fullUrl, resource: patient },
          { fullUrl, resource: patient },
        ]),
        400,
      );
      expect(errorRules(refused)).toEqual(
        expect.arrayContaining(['Bundle.entry[0] bdl-7', 'Bundle.entry[1] bdl-7']),
      );
    });

    it('$validate of a transaction: creates without fullUrl pass, a fullUrl without a resource is bdl-6', async () => {
      const transaction = (entry: unknown[]) => ({ resourceType: 'Bundle', type: 'transaction', entry });
      const create = { resource: patient, request: { method: 'POST', url: 'Patient' } };
      const fine = await post('', '/dstu2/Bundle/$validate', transaction([create]), 200);
      expect(errorRules(fine)).toEqual([]);
      const bad = await post(
        '',
        '/dstu2/Bundle/$validate',
        transaction([
          create,
          { fullUrl: 'http://a.org/fhir/Patient/1', request: { method: 'DELETE', url: 'Patient/1' } },
        ]),
        200,
      );
      expect(errorRules(bad)).toEqual(['Bundle.entry[1] bdl-6']);
      // and the server takes such a transaction as HAPI's client sends it
      const done = await post('', '/dstu2', transaction([create]), 200);
      expect(done.body.entry[0].response.status).toMatch(/^201/);
    });

    it('POST /dstu2 refuses an envelope that breaks a Bundle invariant, naming it, and stores nothing', async () => {
      const before = await t.connection.collection('resources').countDocuments({ t: 'Patient' });
      const refused = await post(
        '',
        '/dstu2',
        {
          resourceType: 'Bundle',
          type: 'batch',
          entry: [
            { resource: patient, request: { method: 'POST', url: 'Patient' } },
            { fullUrl: 'http://a.org/fhir/Patient/1', request: { method: 'DELETE', url: 'Patient/1' } },
          ],
        },
        400,
      );
      expect(refused.body.resourceType).toBe('OperationOutcome');
      expect(errorRules(refused)).toEqual(['Bundle.entry[1] bdl-6']);
      const withTotal = await post(
        '',
        '/dstu2',
        {
          resourceType: 'Bundle',
          type: 'transaction',
          total: 1,
          entry: [{ resource: patient, request: { method: 'POST', url: 'Patient' } }],
        },
        400,
      );
      expect(errorRules(withTotal)).toEqual(['Bundle bdl-1']);
      expect(await t.connection.collection('resources').countDocuments({ t: 'Patient' })).toBe(before);
    });
  });
});
