import fc from 'fast-check';
import request from 'supertest';
import { createTestApp, TestApp } from '@app/testing';
import {
  bearer,
  clientHeaders,
  createClient,
  createUser,
  IDENTITY_TEST_ENV,
  TestClient,
  TestUser,
} from '@app/testing/factories';

/**
 * Bad-input corpus: property-based and hand-picked inputs against every route.
 * Whatever arrives: no 5xx, a clear 4xx body, nothing stored, and the server stays alive.
 */
describe('bad input corpus (e2e)', () => {
  let t: TestApp;
  let client: TestClient;
  let user: TestUser;
  let auth: Record<string, string>;

  beforeAll(async () => {
    t = await createTestApp({ ...IDENTITY_TEST_ENV, DIRECTORY_SEED: 'false' });
    client = await createClient(t);
    user = await createUser(t, client);
    auth = bearer(user.access_token);
  });
  afterAll(async () => t?.close());

  const stored = async () => ({
    resources: await t.connection.collection('resources').countDocuments({}),
    history: await t.connection.collection('resource_history').countDocuments({}),
  });

  /** Every answer to a bad request: a 4xx with a readable body, never a 5xx or a stack trace. */
  function expectClear4xx(res: request.Response, what: string) {
    expect({ what, status: res.status }).toEqual({ what, status: expect.any(Number) });
    if (res.status >= 500) throw new Error(`${what} → ${res.status} ${res.text.slice(0, 300)}`);
    if (res.status >= 400) {
      const body = res.body ?? {};
      const clear = body.resourceType === 'OperationOutcome' || typeof body.error === 'string';
      if (!clear) throw new Error(`${what} → ${res.status} without a clear body: ${res.text.slice(0, 200)}`);
      expect(res.text).not.toMatch(/\n\s+at .+\.(js|ts):\d+/);
    }
  }

  const postRoutes = [
    '/r4/Patient',
    '/r4',
    '/stu3/Observation',
    '/dstu2',
    '/user-management/v1/user',
    '/user-management/v1/user/auth-code',
    '/oauth2/token',
    '/auth/realms/dev-portal/protocol/openid-connect/token',
    '/api/search',
    '/connect/system/clinical',
  ];

  it('survives arbitrary JSON bodies on every POST route, storing nothing', async () => {
    const before = await stored();
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...postRoutes), fc.jsonValue({ maxDepth: 4 }), async (route, body) => {
        const res = await request(t.server)
          .post(route)
          .set(auth)
          .set('Content-Type', 'application/json')
          .send(JSON.stringify(body));
        expectClear4xx(res, `POST ${route} ${JSON.stringify(body).slice(0, 80)}`);
      }),
      { numRuns: 150 },
    );
    const after = await stored();
    // a random body can be a valid resource only by accident; anything stored must have been 2xx
    expect(after.resources - before.resources).toBeLessThanOrEqual(after.history - before.history);
    await request(t.server).get('/health').expect(200);
  });

  it('survives malformed, truncated and odd bodies', async () => {
    const before = await stored();
    const bodies = [
      '{"resourceType": "Patient",',
      '{"resourceType": "Patient", "name": [{"family": "x"}',
      '[',
      'null',
      '"just a string"',
      '{"resourceType": {"$gt": ""}}',
      '{"resourceType": "Patient", "id": "../../etc/passwd"}',
      '{"resourceType": "Patient", "id": "a/b"}',
      '{"resourceType": "Patient", "id": "%00"}',
      '{"resourceType": "Patient", "name": [{"family": "\\u0000\\ud800"}]}',
      `{"resourceType": "Patient", "name": ${'['.repeat(5000)}${']'.repeat(5000)}}`,
      `{"resourceType": "Patient", "gender": "${'x'.repeat(100000)}"}`,
      `{"resourceType": "Bundle", "type": "transaction", "entry": ${JSON.stringify(Array.from({ length: 21 }, () => ({})))}}`,
      '{"resourceType": "Bundle", "type": "transaction", "entry": [{"resource": {"resourceType": "Patient"}}]}',
      '{"resourceType": "Bundle", "type": "searchset", "entry": []}',
      '{"$where": "sleep(1000)"}',
    ];
    let created = 0;
    for (const route of ['/r4/Patient', '/r4']) {
      for (const body of bodies) {
        const res = await request(t.server)
          .post(route)
          .set(auth)
          .set('Content-Type', 'application/fhir+json')
          .send(body);
        expectClear4xx(res, `POST ${route} ${body.slice(0, 60)}`);
        // odd but structurally valid resources (a long code) may be stored; a NUL is refused
        if (route === '/r4/Patient' && res.status < 300) created++;
      }
    }
    const xml = await request(t.server)
      .post('/r4/Patient')
      .set(auth)
      .set('Content-Type', 'application/fhir+xml')
      .send('<Patient/>');
    expectClear4xx(xml, 'xml body');
    expect(xml.status).toBeGreaterThanOrEqual(400);
    // each accepted create stores the resource and its Provenance; nothing else was stored
    const after = await stored();
    expect(after.resources - before.resources).toBe(2 * created);
  });

  it('survives odd ids and path segments', async () => {
    await fc.assert(
      fc.asyncProperty(fc.string({ minLength: 1, maxLength: 80 }), async (id) => {
        const path = `/r4/Patient/${encodeURIComponent(id)}`;
        for (const method of ['get', 'delete'] as const) {
          const res = await request(t.server)[method](path).set(auth);
          expectClear4xx(res, `${method} ${path}`);
        }
        const hist = await request(t.server)
          .get(`${path}/_history/${encodeURIComponent(id)}`)
          .set(auth);
        expectClear4xx(hist, `history ${path}`);
      }),
      { numRuns: 60 },
    );
    for (const path of [
      '/r4/Patient/..%2F..%2Fetc',
      '/r4/..%2Fpurge',
      '/r4/Patient/%00',
      '/R4/Nope/1',
      '/r5/Patient',
    ]) {
      expectClear4xx(await request(t.server).get(path).set(auth), path);
    }
  });

  it('treats Mongo operators in query strings and headers as literals', async () => {
    // values that would match everything if they reached a query as operators or regexes
    for (const q of [
      'name=%7B%22%24gt%22%3A%22%22%7D',
      'name=.*',
      'name=^(a%2B)%2B$',
      'name=%5C',
      '_id=%7B%22%24ne%22%3A1%7D',
    ]) {
      const res = await request(t.server).get(`/r4/Patient?${q}`).set(auth);
      expectClear4xx(res, q);
      if (res.status === 200) expect({ q, total: res.body.total }).toEqual({ q, total: 0 });
    }
    // operator-shaped keys stay literal parameter names: unknown, so reported, never applied
    for (const q of ['name[$ne]=x', 'name[$gt]=', '_id[$ne]=1']) {
      const res = await request(t.server).get(`/r4/Patient?${q}`).set(auth);
      expectClear4xx(res, q);
      if (res.status === 200) {
        const outcome = (res.body.entry ?? []).find((e: any) => e.search?.mode === 'outcome');
        expect({ q, outcome: Boolean(outcome) }).toEqual({ q, outcome: true });
      }
    }
    const queries = [
      'birthdate=$gt',
      '_count=-1',
      '_count=abc',
      '_skip=1e9',
      '_sort=$natural',
      'name=a&name=b&name=c',
      '_include=*:*',
    ];
    for (const q of queries) {
      const res = await request(t.server).get(`/r4/Patient?${q}`).set(auth);
      expectClear4xx(res, q);
    }
    for (const headers of [
      { ...clientHeaders(client, user.service_user_id), 'x-service-user-id': '{"$gt":""}' },
      { ...clientHeaders(client, user.service_user_id), client_secret: '{"$ne":null}' },
      { client_id: '{"$ne":null}', client_secret: 'x', 'x-service-user-id': '1' },
      { ...auth, ...clientHeaders(client, user.service_user_id) },
      { Authorization: 'Bearer ' + 'a'.repeat(5000) },
      { Authorization: 'Basic Zm9vOmJhcg==' },
    ]) {
      const res = await request(t.server).get('/r4/Patient').set(headers);
      expectClear4xx(res, JSON.stringify(headers).slice(0, 80));
      expect({ headers, status: res.status }).toEqual({ headers, status: expect.any(Number) });
      if (res.status < 400) throw new Error(`accepted: ${JSON.stringify(headers).slice(0, 120)}`);
    }
  });

  it('answers wrong methods and unknown routes with 4xx', async () => {
    for (const [method, path] of [
      ['patch', '/r4/Patient/1'],
      ['put', '/r4'],
      ['delete', '/user-management/v1/user'],
      ['get', '/oauth2/token'],
      ['post', '/health'],
      ['get', '/r4/purge'],
    ] as const) {
      const res = await request(t.server)[method](path).set(auth);
      expectClear4xx(res, `${method} ${path}`);
      expect(res.status).toBeGreaterThanOrEqual(400);
    }
    await request(t.server).get('/health').expect(200);
  });
});
