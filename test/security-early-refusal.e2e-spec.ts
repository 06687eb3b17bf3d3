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
});
