import request from 'supertest';
import {
  bearer,
  createClient,
  createTestApp,
  createUser,
  IDENTITY_TEST_ENV,
  TestApp,
  TestClient,
  TestUser,
} from '@app/testing';
import { conditionKey } from '../src/storage/conditional-keys.repository';
import type { TenantContext } from '../src/tenancy/tenant-context';

/**
 * Conditional interactions never widen (https://hl7.org/fhir/R4/http.html#cond-update): a condition
 * that loses its criteria is refused, a conditional update does not overwrite a resource that did
 * not match; patch paths cannot reach a prototype; search values with control characters are
 * refused before any database work.
 */
describe('security: conditional semantics and input that reaches the engine (e2e)', () => {
  let t: TestApp;
  let alice: TestUser;
  let client: TestClient;
  const json = { 'Content-Type': 'application/fhir+json' };
  const patient = (value: string, extra: Record<string, unknown> = {}) => ({
    resourceType: 'Patient',
    identifier: [{ system: 'urn:test:cond', value }],
    ...extra,
  });
  const send = (method: 'post' | 'put' | 'delete' | 'patch', path: string, body?: unknown, headers = {}) => {
    const agent = request(t.server);
    const req = agent[method](path)
      .set(bearer(alice.access_token))
      .set({ ...json, ...headers });
    return body === undefined ? req : req.send(JSON.stringify(body));
  };
  const total = async (query: string) =>
    (await send('post', '/r4/Patient/_search', undefined, {}).type('form').send(query).expect(200)).body
      .total as number;
  const live = async (id: string) =>
    (await request(t.server).get(`/r4/Patient/${id}`).set(bearer(alice.access_token))).status;

  beforeAll(async () => {
    t = await createTestApp(IDENTITY_TEST_ENV);
    client = await createClient(t);
    alice = await createUser(t, client);
  });
  afterAll(async () => t?.close());

  describe('handling=lenient never leaves a condition without criteria', () => {
    const lenient = { Prefer: 'handling=lenient' };

    it('conditional DELETE with only unknown parameters → 400, the only Patient stays', async () => {
      const only = (await send('post', '/r4/Patient', patient('only')).expect(201)).body.id as string;
      const res = await send('delete', '/r4/Patient?unknown=1', undefined, lenient);
      expect(res.status).toBe(400);
      expect(res.body.resourceType).toBe('OperationOutcome');
      expect(res.body.issue[0].diagnostics).toContain('no search criteria');
      expect(res.body.issue[0].diagnostics).toContain('unknown');
      // an empty value is no criterion either
      await send('delete', '/r4/Patient?identifier=', undefined, lenient).expect(400);
      expect(await live(only)).toBe(200);
    });

    it('conditional PUT and If-None-Exist with only unknown parameters → 400, nothing written', async () => {
      const id = (await send('post', '/r4/Patient', patient('put-l')).expect(201)).body.id as string;
      await send('put', '/r4/Patient?unknown=1', patient('put-l', { gender: 'male' }), lenient).expect(400);
      const current = await request(t.server).get(`/r4/Patient/${id}`).set(bearer(alice.access_token));
      expect(current.body.meta.versionId).toBe('1');
      const before = await total('identifier=urn:test:cond|inx-l');
      await send('post', '/r4/Patient', patient('inx-l'), {
        ...lenient,
        'If-None-Exist': 'unknown=1',
      }).expect(400);
      expect(await total('identifier=urn:test:cond|inx-l')).toBe(before);
    });

    it('in a transaction: each such entry fails alone with 400', async () => {
      const res = await send(
        'post',
        '/r4',
        {
          resourceType: 'Bundle',
          type: 'batch',
          entry: [
            { request: { method: 'DELETE', url: 'Patient?unknown=1' } },
            { resource: patient('b-l'), request: { method: 'PUT', url: 'Patient?unknown=2' } },
            {
              resource: patient('b-l'),
              request: { method: 'POST', url: 'Patient', ifNoneExist: 'unknown=3' },
            },
          ],
        },
        lenient,
      ).expect(200);
      expect(res.body.entry.map((e: { response: { status: string } }) => e.response.status)).toEqual([
        '400 Bad Request',
        '400 Bad Request',
        '400 Bad Request',
      ]);
      expect(await total('identifier=urn:test:cond|b-l')).toBe(0);
    });
  });

  describe('race-free conditional create (a unique key per condition)', () => {
    const ids = (responses: request.Response[]) => new Set(responses.map((r) => r.body.id as string));

    it('20 identical POSTs with If-None-Exist at once → one resource, every answer names it', async () => {
      const ifNoneExist = { 'If-None-Exist': 'identifier=urn:test:cond|race20' };
      const responses = await Promise.all(
        Array.from({ length: 20 }, () => send('post', '/r4/Patient', patient('race20'), ifNoneExist)),
      );
      expect(responses.map((r) => r.status).sort()).toEqual([...Array<number>(19).fill(200), 201]);
      expect(ids(responses).size).toBe(1);
      expect(await total('identifier=urn:test:cond|race20')).toBe(1);
    });

    it('10 identical conditional PUTs at once that match nothing → one resource', async () => {
      const responses = await Promise.all(
        Array.from({ length: 10 }, () =>
          send('put', '/r4/Patient?identifier=urn:test:cond|race-put', patient('race-put')),
        ),
      );
      expect(responses.filter((r) => r.status === 201)).toHaveLength(1);
      expect(responses.every((r) => r.status === 200 || r.status === 201)).toBe(true);
      expect(ids(responses).size).toBe(1);
      expect(await total('identifier=urn:test:cond|race-put')).toBe(1);
    });

    const bundleOf = (type: 'batch' | 'transaction', entry: Record<string, unknown>) => ({
      resourceType: 'Bundle',
      type,
      entry: [entry],
    });
    const entryId = (res: request.Response) => {
      expect(res.status).toBe(200);
      const location = res.body.entry[0].response.location as string | undefined;
      expect(location).toMatch(/^Patient\/[^/]+\/_history\/\d+$/);
      return location!.split('/')[1];
    };

    it('10 identical batches at once, each one entry with ifNoneExist → one resource, every entry names it', async () => {
      const bundle = bundleOf('batch', {
        resource: patient('race-batch'),
        request: { method: 'POST', url: 'Patient', ifNoneExist: 'identifier=urn:test:cond|race-batch' },
      });
      const responses = await Promise.all(Array.from({ length: 10 }, () => send('post', '/r4', bundle)));
      const statuses = responses.map((r) => r.body.entry[0].response.status as string).sort();
      expect(statuses).toEqual([...Array<string>(9).fill('200 OK'), '201 Created'].sort());
      expect(new Set(responses.map(entryId)).size).toBe(1);
      expect(await total('identifier=urn:test:cond|race-batch')).toBe(1);
    });

    it('a transaction entry with ifNoneExist racing a REST conditional create → one resource', async () => {
      const condition = 'identifier=urn:test:cond|race-mixed';
      const bundle = bundleOf('transaction', {
        resource: patient('race-mixed'),
        request: { method: 'POST', url: 'Patient', ifNoneExist: condition },
      });
      const [viaBundle, ...viaRest] = await Promise.all([
        send('post', '/r4', bundle),
        ...Array.from({ length: 4 }, () =>
          send('post', '/r4/Patient', patient('race-mixed'), { 'If-None-Exist': condition }),
        ),
      ]);
      const names = new Set([entryId(viaBundle), ...viaRest.map((r) => r.body.id as string)]);
      expect(names.size).toBe(1);
      expect(await total('identifier=urn:test:cond|race-mixed')).toBe(1);
    });

    it('conditional PUT entries that create, in 6 batches at once → one resource', async () => {
      const bundle = bundleOf('batch', {
        resource: patient('race-bput'),
        request: { method: 'PUT', url: 'Patient?identifier=urn:test:cond|race-bput' },
      });
      const responses = await Promise.all(Array.from({ length: 6 }, () => send('post', '/r4', bundle)));
      const statuses = responses.map((r) => r.body.entry[0].response.status as string);
      expect(statuses.filter((s) => s === '201 Created')).toHaveLength(1);
      expect(statuses.every((s) => s === '200 OK' || s === '201 Created')).toBe(true);
      expect(new Set(responses.map(entryId)).size).toBe(1);
      expect(await total('identifier=urn:test:cond|race-bput')).toBe(1);
    });

    it('two entries of one bundle creating under one condition: the second → 400, one resource', async () => {
      const entry = {
        resource: patient('twice'),
        request: { method: 'POST', url: 'Patient', ifNoneExist: 'identifier=urn:test:cond|twice' },
      };
      const res = await send('post', '/r4', { resourceType: 'Bundle', type: 'batch', entry: [entry, entry] });
      expect(res.status).toBe(200);
      expect(res.body.entry.map((e: any) => e.response.status)).toEqual(['201 Created', '400 Bad Request']);
      expect(res.body.entry[1].response.outcome.issue[0].diagnostics).toContain('same condition');
      expect(await total('identifier=urn:test:cond|twice')).toBe(1);
    });

    it('a bundle entry whose create is refused gives its condition key back', async () => {
      const condition = 'identifier=urn:test:cond|refused-b';
      const refused = await send(
        'post',
        '/r4',
        bundleOf('batch', {
          resource: patient('refused-b', { gender: 'not-a-gender' }),
          request: { method: 'POST', url: 'Patient', ifNoneExist: condition },
        }),
      ).expect(200);
      expect(refused.body.entry[0].response.status).toMatch(/^4/);
      const ctx = { clientId: client.client_id, userId: alice.service_user_id } as TenantContext;
      const key = conditionKey(ctx, 'r4', 'Patient', [['identifier', 'urn:test:cond|refused-b']]);
      expect(await t.connection.collection('conditional_keys').findOne({ _id: key as never })).toBeNull();
      await send('post', '/r4/Patient', patient('refused-b'), { 'If-None-Exist': condition }).expect(201);
      expect(await total('identifier=urn:test:cond|refused-b')).toBe(1);
    });

    it('a key whose resource was deleted, or never written and stale, blocks nothing', async () => {
      const condition = 'identifier=urn:test:cond|keys';
      const first = await send('post', '/r4/Patient', patient('keys'), { 'If-None-Exist': condition }).expect(
        201,
      );
      await request(t.server)
        .delete(`/r4/Patient/${first.body.id}`)
        .set(bearer(alice.access_token))
        .expect(200);
      const second = await send('post', '/r4/Patient', patient('keys'), {
        'If-None-Exist': condition,
      }).expect(201);
      expect(second.body.id).not.toBe(first.body.id);
      // a creator that died between claiming the key and writing its resource, 11 s ago
      const ctx = { clientId: client.client_id, userId: alice.service_user_id } as TenantContext;
      const orphan = 'identifier=urn:test:cond|orphan';
      await t.connection.collection('conditional_keys').insertOne({
        _id: conditionKey(ctx, 'r4', 'Patient', [['identifier', 'urn:test:cond|orphan']]) as never,
        c: client.client_id,
        u: alice.service_user_id,
        rk: `r4|${client.client_id}|Patient|never-written`,
        at: new Date(Date.now() - 11_000),
      });
      await send('post', '/r4/Patient', patient('orphan'), { 'If-None-Exist': orphan }).expect(201);
      expect(await total('identifier=urn:test:cond|orphan')).toBe(1);
    });

    it('a create refused (invalid body) gives its key back: the next valid one is created', async () => {
      const condition = { 'If-None-Exist': 'identifier=urn:test:cond|refused' };
      await send('post', '/r4/Patient', patient('refused', { gender: 'no-such-code' }), condition).expect(
        400,
      );
      await send('post', '/r4/Patient', patient('refused'), condition).expect(201);
    });

    it('a key whose resource does not match its condition answers nothing: the matching body is created', async () => {
      const condition = { 'If-None-Exist': 'identifier=urn:test:cond|mismatch' };
      const first = await send('post', '/r4/Patient', patient('something-else'), condition).expect(201);
      const second = await send('post', '/r4/Patient', patient('mismatch'), condition).expect(201);
      expect(second.body.id).not.toBe(first.body.id);
      expect(second.body.identifier[0].value).toBe('mismatch');
      // from now on the condition answers the resource that matches it
      const third = await send('post', '/r4/Patient', patient('mismatch'), condition).expect(200);
      expect(third.body.id).toBe(second.body.id);
      expect(await total('identifier=urn:test:cond|mismatch')).toBe(1);
    });

    it('the same in a batch entry', async () => {
      const entry = (value: string) => ({
        resourceType: 'Bundle',
        type: 'batch',
        entry: [
          {
            resource: patient(value),
            request: {
              method: 'POST',
              url: 'Patient',
              ifNoneExist: 'identifier=urn:test:cond|batch-mismatch',
            },
          },
        ],
      });
      const first = await send('post', '/r4', entry('not-it')).expect(200);
      expect(first.body.entry[0].response.status).toMatch(/^201/);
      const second = await send('post', '/r4', entry('batch-mismatch')).expect(200);
      expect(second.body.entry[0].response.status).toMatch(/^201/);
      expect(await total('identifier=urn:test:cond|batch-mismatch')).toBe(1);
    });
  });

  describe('conditional update with no match and a body id', () => {
    it('an existing id that does not match → 409, the resource unchanged; a free id → 201', async () => {
      const other = (await send('post', '/r4/Patient', patient('victim', { gender: 'female' })).expect(201))
        .body.id as string;
      const res = await send(
        'put',
        '/r4/Patient?identifier=urn:test:cond|nomatch',
        patient('nomatch', { id: other, gender: 'male' }),
      );
      expect(res.status).toBe(409);
      expect(res.body.resourceType).toBe('OperationOutcome');
      const current = await request(t.server).get(`/r4/Patient/${other}`).set(bearer(alice.access_token));
      expect(current.body.gender).toBe('female');
      expect(current.body.meta.versionId).toBe('1');
      await send(
        'put',
        '/r4/Patient?identifier=urn:test:cond|fresh',
        patient('fresh', { id: 'cond-fresh-id' }),
      ).expect(201);
    });

    it('the same in a transaction entry → 409 for that entry', async () => {
      const other = (await send('post', '/r4/Patient', patient('victim2', { gender: 'female' })).expect(201))
        .body.id as string;
      const res = await send('post', '/r4', {
        resourceType: 'Bundle',
        type: 'transaction',
        entry: [
          {
            resource: patient('nomatch2', { id: other, gender: 'male' }),
            request: { method: 'PUT', url: 'Patient?identifier=urn:test:cond|nomatch2' },
          },
        ],
      }).expect(200);
      expect(res.body.entry[0].response.status).toBe('409 Conflict');
      const current = await request(t.server).get(`/r4/Patient/${other}`).set(bearer(alice.access_token));
      expect(current.body.gender).toBe('female');
    });
  });

  describe('patch paths that name a prototype', () => {
    it.each(['/__proto__/polluted', '/constructor/prototype/polluted', '/name/0/__proto__'])(
      'JSON Patch path %s → 400, nothing stored',
      async (path) => {
        const id = (await send('post', '/r4/Patient', patient('proto')).expect(201)).body.id as string;
        const res = await send('patch', `/r4/Patient/${id}`, [{ op: 'add', path, value: { x: 1 } }], {
          'Content-Type': 'application/json-patch+json',
        });
        expect(res.status).toBe(400);
        expect(res.body.resourceType).toBe('OperationOutcome');
        const moved = await send(
          'patch',
          `/r4/Patient/${id}`,
          [{ op: 'copy', from: path, path: '/gender' }],
          {
            'Content-Type': 'application/json-patch+json',
          },
        );
        expect(moved.status).toBe(400);
        const current = await request(t.server).get(`/r4/Patient/${id}`).set(bearer(alice.access_token));
        expect(current.body.meta.versionId).toBe('1');
        expect(({} as Record<string, unknown>).polluted).toBeUndefined();
      },
    );

    it('FHIRPath Patch add with the name __proto__ or constructor → 400', async () => {
      const id = (await send('post', '/r4/Patient', patient('proto2')).expect(201)).body.id as string;
      for (const name of ['__proto__', 'constructor']) {
        const res = await send('patch', `/r4/Patient/${id}`, {
          resourceType: 'Parameters',
          parameter: [
            {
              name: 'operation',
              part: [
                { name: 'type', valueCode: 'add' },
                { name: 'path', valueString: 'Patient' },
                { name: 'name', valueString: name },
                { name: 'value', valueString: 'x' },
              ],
            },
          ],
        });
        expect(res.status).toBe(400);
      }
    });
  });

  describe('control characters in search values', () => {
    it.each([
      '/r4/Patient?name=a%00b',
      '/r4/Patient?name:contains=%00',
      '/r4/Patient?identifier=x%7Ca%00',
      '/r4/Observation?subject.name=a%00b',
      '/r4/Patient?na%00me=a',
    ])('%s → 400 OperationOutcome', async (path) => {
      const res = await request(t.server).get(path).set(bearer(alice.access_token));
      expect(res.status).toBe(400);
      expect(res.body.resourceType).toBe('OperationOutcome');
      expect(res.body.issue[0].diagnostics).toContain('U+0000');
    });

    it('also in a form _search and in If-None-Exist', async () => {
      const res = await send('post', '/r4/Patient/_search', undefined).type('form').send('name=a%00b');
      expect(res.status).toBe(400);
      await send('post', '/r4/Patient', patient('nul'), { 'If-None-Exist': 'name=a%00b' }).expect(400);
    });
  });
});
