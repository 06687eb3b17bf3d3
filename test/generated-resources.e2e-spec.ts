import request from 'supertest';
import { validateResource, type FhirVersion } from '@app/fhir';
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
 * Every kind of resource the server writes itself (Provenance, OperationOutcome, the Bundles of
 * batch/transaction/history/search, CapabilityStatement or Conformance) is generated through the
 * real app in each version and then run through the project's validator for that version.
 */
describe.each(['r4', 'stu3', 'dstu2'] as const)(
  'generated resources are valid %s',
  (version: FhirVersion) => {
    let t: TestApp;
    let alice: TestUser;
    const auth = () => bearer(alice.access_token);
    // DSTU2 HumanName.family repeats (https://hl7.org/fhir/DSTU2/datatypes.html#HumanName)
    const patient = (id?: string) => ({
      resourceType: 'Patient',
      ...(id ? { id } : {}),
      name: [{ family: version === 'dstu2' ? ['Gen'] : 'Gen' }],
    });

    beforeAll(async () => {
      t = await createTestApp(IDENTITY_TEST_ENV);
      alice = await createUser(t, await createClient(t));
    });
    afterAll(async () => t?.close());

    const send = (method: 'post' | 'put', path: string, body: object) =>
      (method === 'post'
        ? request(t.server).post(`/${version}${path}`)
        : request(t.server).put(`/${version}${path}`)
      )
        .set(auth())
        .set('Content-Type', 'application/fhir+json')
        .send(body);
    const get = (path: string) => request(t.server).get(`/${version}${path}`).set(auth());

    /** Validation errors of a generated resource (warnings and information do not make it invalid). */
    const errors = (resource: unknown) =>
      validateResource(version, resource)
        .filter((i) => i.severity === 'error')
        .map((i) => `${i.path}: ${i.message}`);

    it('CapabilityStatement / Conformance', async () => {
      const res = await request(t.server).get(`/${version}/metadata`).expect(200);
      expect(res.body.resourceType).toBe(version === 'dstu2' ? 'Conformance' : 'CapabilityStatement');
      expect(errors(res.body)).toEqual([]);
      // SMART oauth-uris requires both slices (http://fhir-registry.smarthealthit.org/StructureDefinition/oauth-uris)
      const oauth = res.body.rest[0].security.extension.find((e: any) => e.url.endsWith('/oauth-uris'));
      expect(oauth.extension.map((e: any) => e.url)).toEqual(['authorize', 'token']);
    });

    it('Provenance (in a searchset Bundle)', async () => {
      await send('put', '/Patient/gen-prov', patient('gen-prov')).expect(201);
      const res = await get('/Provenance?target=Patient/gen-prov').expect(200);
      expect(res.body.entry[0].resource.resourceType).toBe('Provenance');
      expect(errors(res.body.entry[0].resource)).toEqual([]);
      expect(errors(res.body)).toEqual([]);
    });

    it('OperationOutcomes: errors, a deleted read, a delete', async () => {
      await send('put', '/Patient/gen-gone', patient('gen-gone')).expect(201);
      const deleted = await request(t.server).delete(`/${version}/Patient/gen-gone`).set(auth()).expect(200);
      const gone = await get('/Patient/gen-gone').expect(410);
      const missing = await get('/Patient/gen-none').expect(404);
      const invalid = await send('post', '/Patient', { resourceType: 'Patient', bogus: 1 }).expect(400);
      // `deleted` is an R4 issue code (https://hl7.org/fhir/STU3/valueset-issue-type.html has none)
      expect(gone.body.issue[0].code).toBe(version === 'r4' ? 'deleted' : 'not-found');
      for (const outcome of [deleted.body, gone.body, missing.body, invalid.body]) {
        expect(outcome.resourceType).toBe('OperationOutcome');
        expect(errors(outcome)).toEqual([]);
      }
    });

    it('$validate answers', async () => {
      const res = await send('post', '/Patient/$validate', { resourceType: 'Patient', bogus: 1 }).expect(200);
      expect(errors(res.body)).toEqual([]);
    });

    it('batch-response and transaction-response Bundles, with failed entries', async () => {
      const entries = [
        { resource: patient(), request: { method: 'POST', url: 'Patient' } },
        { resource: { resourceType: 'Patient', bogus: 1 }, request: { method: 'POST', url: 'Patient' } },
        { request: { method: 'GET', url: 'Patient/gen-none' } },
      ];
      const batch = await send('post', '', { resourceType: 'Bundle', type: 'batch', entry: entries }).expect(
        200,
      );
      expect(batch.body.type).toBe('batch-response');
      expect(batch.body.entry.map((e: any) => e.response.status)).toEqual([
        '201 Created',
        '400 Bad Request',
        '404 Not Found',
      ]);
      expect(errors(batch.body)).toEqual([]);
      const transaction = await send('post', '', {
        resourceType: 'Bundle',
        type: 'transaction',
        entry: [{ resource: patient(), request: { method: 'POST', url: 'Patient' } }],
      }).expect(200);
      expect(transaction.body.type).toBe('transaction-response');
      expect(errors(transaction.body)).toEqual([]);
    });

    it('history Bundles (with a deleted version) and searchset Bundles', async () => {
      await send('put', '/Patient/gen-hist', patient('gen-hist')).expect(201);
      await send('put', '/Patient/gen-hist', { ...patient('gen-hist'), active: true }).expect(200);
      await request(t.server).delete(`/${version}/Patient/gen-hist`).set(auth()).expect(200);
      const history = await get('/Patient/gen-hist/_history').expect(200);
      expect(history.body.entry).toHaveLength(3);
      expect(errors(history.body)).toEqual([]);
      const typeHistory = await get('/Patient/_history').expect(200);
      expect(errors(typeHistory.body)).toEqual([]);
      const search = await get('/Patient?_count=2&bogus-param=1').expect(200);
      expect(search.body.entry.some((e: any) => e.search.mode === 'outcome')).toBe(true);
      expect(errors(search.body)).toEqual([]);
    });
  },
);
