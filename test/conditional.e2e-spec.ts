import request from 'supertest';
import { validateResource } from '@app/fhir';
import {
  bearer,
  createClient,
  createTestApp,
  createUser,
  IDENTITY_TEST_ENV,
  TestApp,
  TestUser,
} from '@app/testing';

/** Conditional create/update/delete and Prefer (https://hl7.org/fhir/R4/http.html#cond-update). */
describe('conditional interactions and Prefer (e2e)', () => {
  let t: TestApp;
  let alice: TestUser;
  let bob: TestUser;
  const json = { 'Content-Type': 'application/fhir+json' };
  const patient = (value: string, extra: Record<string, unknown> = {}) => ({
    resourceType: 'Patient',
    identifier: [{ system: 'urn:test:mrn', value }],
    ...extra,
  });
  const post = (path: string, body: unknown, headers: Record<string, string> = {}, user = alice) =>
    request(t.server)
      .post(path)
      .set(bearer(user.access_token))
      .set({ ...json, ...headers })
      .send(JSON.stringify(body));
  const put = (path: string, body: unknown, headers: Record<string, string> = {}) =>
    request(t.server)
      .put(path)
      .set(bearer(alice.access_token))
      .set({ ...json, ...headers })
      .send(JSON.stringify(body));
  const count = async (value: string, user = alice) =>
    (
      await request(t.server)
        .get(`/r4/Patient?identifier=urn:test:mrn|${value}&_summary=count`)
        .set(bearer(user.access_token))
        .expect(200)
    ).body.total as number;

  beforeAll(async () => {
    t = await createTestApp(IDENTITY_TEST_ENV);
    const client = await createClient(t);
    [alice, bob] = await Promise.all([createUser(t, client), createUser(t, client)]);
  });
  afterAll(async () => t?.close());

  describe('conditional create (If-None-Exist)', () => {
    it('0 matches → 201; 1 match → 200 with the existing resource, nothing stored', async () => {
      const ifNoneExist = { 'If-None-Exist': 'identifier=urn:test:mrn|c1' };
      const first = await post('/r4/Patient', patient('c1'), ifNoneExist).expect(201);
      const second = await post('/r4/Patient', patient('c1', { gender: 'male' }), ifNoneExist).expect(200);
      expect(second.body.id).toBe(first.body.id);
      expect(second.body.gender).toBeUndefined();
      expect(second.headers.etag).toBe('W/"1"');
      expect(await count('c1')).toBe(1);
      // another user of the client does not see alice's resource: its own create goes ahead
      await post('/r4/Patient', patient('c1'), ifNoneExist, bob).expect(201);
    });

    it('several matches → 412 and nothing stored; unknown parameter → 400', async () => {
      await post('/r4/Patient', patient('c2')).expect(201);
      await post('/r4/Patient', patient('c2')).expect(201);
      const res = await post('/r4/Patient', patient('c2'), { 'If-None-Exist': 'identifier=urn:test:mrn|c2' });
      expect(res.status).toBe(412);
      expect(res.body.resourceType).toBe('OperationOutcome');
      expect(res.body.issue[0].code).toBe('multiple-matches');
      expect(await count('c2')).toBe(2);
      await post('/r4/Patient', patient('c2'), { 'If-None-Exist': 'nonsense=1' }).expect(400);
    });
  });

  describe('conditional update and delete', () => {
    it('PUT ?criteria: 0 → 201 create; 1 → update of the match; If-Match applies; 2+ → 412', async () => {
      const created = await put('/r4/Patient?identifier=urn:test:mrn|u1', patient('u1')).expect(201);
      const id = created.body.id;
      const updated = await put(
        '/r4/Patient?identifier=urn:test:mrn|u1',
        patient('u1', { gender: 'female' }),
      );
      expect(updated.status).toBe(200);
      expect(updated.body.id).toBe(id);
      expect(updated.body.meta.versionId).toBe('2');
      await put('/r4/Patient?identifier=urn:test:mrn|u1', patient('u1'), { 'If-Match': 'W/"1"' }).expect(412);
      await put('/r4/Patient?identifier=urn:test:mrn|u1', patient('u1'), { 'If-Match': 'W/"2"' }).expect(200);
      await put('/r4/Patient?identifier=urn:test:mrn|u1', patient('u1', { id: 'other' })).expect(400);
      await post('/r4/Patient', patient('u2')).expect(201);
      await post('/r4/Patient', patient('u2')).expect(201);
      await put('/r4/Patient?identifier=urn:test:mrn|u2', patient('u2', { gender: 'male' })).expect(412);
      expect(await count('u2')).toBe(2);
      await put('/r4/Patient', patient('u3')).expect(400);
    });

    it('DELETE ?criteria: 1 → deleted; 0 → 404; 2+ → 412', async () => {
      const created = await post('/r4/Patient', patient('d1')).expect(201);
      const del = await request(t.server)
        .delete('/r4/Patient?identifier=urn:test:mrn|d1')
        .set(bearer(alice.access_token))
        .expect(200);
      expect(del.body.issue[0].details.text).toContain(`Patient/${created.body.id}`);
      await request(t.server)
        .get(`/r4/Patient/${created.body.id}`)
        .set(bearer(alice.access_token))
        .expect(410);
      await request(t.server)
        .delete('/r4/Patient?identifier=urn:test:mrn|d1')
        .set(bearer(alice.access_token))
        .expect(404);
      await post('/r4/Patient', patient('d2')).expect(201);
      await post('/r4/Patient', patient('d2')).expect(201);
      await request(t.server)
        .delete('/r4/Patient?identifier=urn:test:mrn|d2')
        .set(bearer(alice.access_token))
        .expect(412);
      expect(await count('d2')).toBe(2);
    });

    it('in a transaction: ifNoneExist, conditional PUT and DELETE urls, placeholders to the match', async () => {
      const existing = await post('/r4/Patient', patient('t1')).expect(201);
      await post('/r4/Patient', patient('t3')).expect(201);
      await post('/r4/Patient', patient('t4')).expect(201);
      await post('/r4/Patient', patient('t4')).expect(201);
      const bundle = {
        resourceType: 'Bundle',
        type: 'transaction',
        entry: [
          {
            fullUrl: 'urn:uuid:5b2a0c3e-0000-4000-8000-000000000001',
            resource: patient('t1'),
            request: { method: 'POST', url: 'Patient', ifNoneExist: 'identifier=urn:test:mrn|t1' },
          },
          {
            resource: {
              resourceType: 'Observation',
              status: 'final',
              code: { text: 'x' },
              subject: { reference: 'urn:uuid:5b2a0c3e-0000-4000-8000-000000000001' },
            },
            request: { method: 'POST', url: 'Observation' },
          },
          { resource: patient('t2'), request: { method: 'PUT', url: 'Patient?identifier=urn:test:mrn|t2' } },
          { request: { method: 'DELETE', url: 'Patient?identifier=urn:test:mrn|t3' } },
          { request: { method: 'DELETE', url: 'Patient?identifier=urn:test:mrn|t4' } },
        ],
      };
      const res = await post('/r4', bundle, { Prefer: 'return=representation' }).expect(200);
      const errors = validateResource('r4', res.body, 'Bundle').filter((i) => i.severity === 'error');
      expect(errors).toEqual([]);
      const [cond, obs, condPut, condDel, many] = res.body.entry;
      expect(cond.response.status).toBe('200 OK');
      expect(cond.response.location).toBe(`Patient/${existing.body.id}/_history/1`);
      expect(obs.response.status).toBe('201 Created');
      expect(obs.resource.subject.reference).toBe(`Patient/${existing.body.id}`);
      expect(condPut.response.status).toBe('201 Created');
      expect(condDel.response.status).toBe('200 OK');
      expect(many.response.status).toMatch(/^412/);
      expect(await count('t1')).toBe(1);
      expect(await count('t3')).toBe(0);
      expect(await count('t4')).toBe(2);
    });
  });

  describe('Prefer: return=', () => {
    it('minimal: no body; OperationOutcome: an outcome; representation: the resource', async () => {
      const minimal = await post('/r4/Patient', patient('p1'), { Prefer: 'return=minimal' }).expect(201);
      expect(minimal.text).toBe('');
      expect(minimal.headers.location).toMatch(/\/r4\/Patient\/[^/]+\/_history\/1$/);
      expect(minimal.headers.etag).toBe('W/"1"');
      const id = minimal.headers.location.split('/').slice(-3)[0];
      const outcome = await put(`/r4/Patient/${id}`, patient('p1', { id }), {
        Prefer: 'return=OperationOutcome',
      }).expect(200);
      expect(outcome.body.resourceType).toBe('OperationOutcome');
      expect(outcome.body.issue[0].severity).toBe('information');
      expect(outcome.body.issue[0].diagnostics).toContain(`Patient/${id} updated: version 2`);
      expect(
        validateResource('r4', outcome.body, 'OperationOutcome').filter((i) => i.severity === 'error'),
      ).toEqual([]);
      const full = await put(`/r4/Patient/${id}`, patient('p1', { id }), {
        Prefer: 'return=representation',
      }).expect(200);
      expect(full.body.meta.versionId).toBe('3');
    });

    it('handling=lenient ignores an unknown parameter in a condition; strict (default) refuses it', async () => {
      await post('/r4/Patient', patient('l1'), {
        'If-None-Exist': 'identifier=urn:test:mrn|l1&unknown=1',
        Prefer: 'handling=lenient',
      }).expect(201);
      await post('/r4/Patient', patient('l1'), {
        'If-None-Exist': 'identifier=urn:test:mrn|l1&unknown=1',
      }).expect(400);
    });
  });
});
