import request from 'supertest';
import {
  bearer,
  callsDuring,
  createClient,
  createTestApp,
  createUser,
  IDENTITY_TEST_ENV,
  TestApp,
} from '@app/testing';
import { OAuthService } from '../src/modules/auth/oauth/oauth.service';

const EPA = '/auth/realms/epa-uat/protocol/openid-connect/token';

/** Calls of the Express app's request handling while `action` runs. */
const expressCallsDuring = <T>(t: TestApp, action: () => Promise<T>) =>
  callsDuring(t.app.getHttpAdapter().getInstance() as object, 'handle', action);

/** Calls of the token route's handler while `action` runs. */
const tokenCallsDuring = <T>(t: TestApp, action: () => Promise<T>) =>
  callsDuring(t.app.get(OAuthService), 'token', action);

/**
 * Refusals ahead of Express (docs/security.md "Refusals cost almost nothing"): a caller this process
 * already refuses is answered before Express starts the request (query parser, request set-up),
 * before it is logged, routed or its body parsed. Before, the refusal was Express's first
 * middleware: Express's own start of every request ran for each refused one.
 */
describe('security: refusals ahead of Express (e2e)', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp({
      ...IDENTITY_TEST_ENV,
      CLIENT_RESPONSE_BYTES_PER_SECOND: '2kb',
      TRUST_PROXY: 'loopback',
      TOKEN_FAILURE_LIMIT: '3',
    });
  });
  afterAll(async () => t?.close());

  it('a client past its byte share: its remembered credentials are refused without Express seeing the request', async () => {
    const heavy = await createUser(t, await createClient(t));
    const other = await createUser(t, await createClient(t));
    const big = { resourceType: 'Patient', id: 'big', name: [{ family: 'F'.repeat(6_000) }] };
    await request(t.server)
      .put('/r4/Patient/big')
      .set(bearer(heavy.access_token))
      .set('Content-Type', 'application/fhir+json')
      .set('Prefer', 'return=minimal')
      .send(JSON.stringify(big))
      .expect(201);
    // another client is active: the byte share applies
    await request(t.server).get('/r4/Patient').set(bearer(other.access_token)).expect(200);
    let status = 200;
    for (let i = 0; i < 20 && status !== 429; i++)
      status = (await request(t.server).get('/r4/Patient/big').set(bearer(heavy.access_token))).status;
    expect(status).toBe(429);
    const flood = await expressCallsDuring(t, () =>
      Promise.all(
        Array.from({ length: 10 }, () =>
          request(t.server).get('/r4/Patient/big?_elements=name').set(bearer(heavy.access_token)),
        ),
      ),
    );
    expect(flood.result.map((r) => r.status)).toEqual(Array(10).fill(429));
    expect(flood.calls).toBe(0);
    expect(flood.result[0].headers['content-type']).toBe('application/fhir+json; charset=utf-8');
    expect(flood.result[0].body.issue[0]).toMatchObject({ code: 'throttled' });
    expect(Number(flood.result[0].headers['retry-after'])).toBeGreaterThan(0);
    // the other client goes through Express as always
    const served = await expressCallsDuring(t, () =>
      request(t.server).get('/r4/Patient').set(bearer(other.access_token)),
    );
    expect([served.result.status, served.calls]).toEqual([200, 1]);
  });

  it('wrong secrets in the token form body: once the address is refused, 429 before the route; the owner and other clients from it are still served', async () => {
    const attacked = await createClient(t, { programs: ['epa'] });
    const bystander = await createClient(t, { programs: ['epa'] });
    const from = (address: string, body: Record<string, string>) =>
      request(t.server).post(EPA).set('X-Forwarded-For', address).type('form').send(body);
    const credentials = (client_id: string, client_secret: string) => ({
      grant_type: 'client_credentials',
      client_id,
      client_secret,
    });
    // the owner's right secret, verified now: it passes later even from the throttled address
    await from('203.0.113.7', credentials(attacked.client_id, attacked.client_secret)).expect(200);
    for (let i = 0; i < 3; i++)
      await from('203.0.113.7', credentials(attacked.client_id, `wrong-${i}`)).expect(401);
    // the full path refuses the fourth, and remembers the address
    await from('203.0.113.7', credentials(attacked.client_id, 'wrong-3')).expect(429);
    const flood = await tokenCallsDuring(t, () =>
      Promise.all([
        ...Array.from({ length: 10 }, (_, i) =>
          from('203.0.113.7', credentials(attacked.client_id, `wrong-${10 + i}`)),
        ),
        // a body that cannot be read (not UTF-8): refused too, not handed to the pipeline
        request(t.server)
          .post(EPA)
          .set('X-Forwarded-For', '203.0.113.7')
          .set('Content-Type', 'application/x-www-form-urlencoded')
          // sent as they are (supertest would write a Buffer as form fields)
          .serialize((bytes: Buffer) => bytes as unknown as string)
          .send(Buffer.from([0x63, 0x3d, 0xff, 0xfe])),
      ]),
    );
    expect(flood.result.map((r) => r.status)).toEqual(Array(11).fill(429));
    expect(flood.calls).toBe(0);
    expect(flood.result[0].body).toMatchObject({ error: 'too_many_requests' });
    expect(flood.result[10].body).toMatchObject({ error: 'too_many_requests' });
    expect(Number(flood.result[0].headers['retry-after'])).toBeGreaterThan(0);
    expect(flood.result[0].headers['cache-control']).toBe('no-store');
    // what the throttle would let through still goes through, its body read once ahead of Express
    const passed = await tokenCallsDuring(t, () =>
      Promise.all([
        // the owner's secret, verified as right lately
        from('203.0.113.7', credentials(attacked.client_id, attacked.client_secret)),
        // another client from the same address: its own (client, address) pair is not spent
        from('203.0.113.7', credentials(bystander.client_id, bystander.client_secret)),
      ]),
    );
    expect(passed.result.map((r) => [r.status, typeof r.body.access_token])).toEqual([
      [200, 'string'],
      [200, 'string'],
    ]);
    expect(passed.calls).toBe(2);
    // the address as Express's req.ip gives it (TRUST_PROXY): another forwarded address is not refused
    await from('198.51.100.20', credentials(attacked.client_id, 'wrong-elsewhere')).expect(401);
  });

  it('a FHIR request with a body and no credentials at all is answered 401 without Express seeing it (its body never parsed); the token form body still works', async () => {
    const anonymous = await expressCallsDuring(t, () =>
      Promise.all([
        request(t.server)
          .post('/r4/Patient')
          .set('Content-Type', 'application/fhir+json')
          .send(JSON.stringify({ resourceType: 'Patient' })),
        // a body that would not even parse: the 401 all the same, not a 400 of the parser
        request(t.server)
          .put('/r4/Patient/x')
          .set('Content-Type', 'application/fhir+json')
          .send('{"resourceType":'),
        request(t.server)
          .post('/r4/Patient?access_token=abc')
          .set('Content-Type', 'application/fhir+json')
          .send('{}'),
      ]),
    );
    expect(anonymous.calls).toBe(0);
    expect(anonymous.result.map((r) => r.status)).toEqual([401, 401, 401]);
    const [posted, , inQuery] = anonymous.result;
    expect(posted.headers['content-type']).toBe('application/fhir+json; charset=utf-8');
    expect(posted.headers['www-authenticate']).toBe('Bearer realm="fhir"');
    expect(posted.body).toMatchObject({
      resourceType: 'OperationOutcome',
      issue: [{ code: 'login', diagnostics: expect.stringMatching(/^credentials required: /) }],
    });
    expect(inQuery.body.issue[0].diagnostics).toMatch(/tokens are not accepted in the query string/);
    // the answer the full path gives to the same request without a body
    const full = await request(t.server).delete('/r4/Patient/x').expect(401);
    expect(posted.body).toEqual(full.body);
    // credentials in headers, or none on a public route: the request goes on as before
    const user = await createUser(t, await createClient(t));
    const passed = await expressCallsDuring(t, () =>
      Promise.all([
        request(t.server)
          .post('/r4/Patient')
          .set(bearer(user.access_token))
          .set('Content-Type', 'application/fhir+json')
          .send(JSON.stringify({ resourceType: 'Patient' })),
        request(t.server).get('/r4/metadata'),
      ]),
    );
    expect(passed.result.map((r) => r.status)).toEqual([201, 200]);
    expect(passed.calls).toBe(2);
    // client_secret_post: the token endpoint's credentials come in the form body
    const client = await createClient(t, { programs: ['epa'] });
    const token = await request(t.server)
      .post(EPA)
      .type('form')
      .send({
        grant_type: 'client_credentials',
        client_id: client.client_id,
        client_secret: client.client_secret,
      })
      .expect(200);
    expect(typeof token.body.access_token).toBe('string');
  });
});
