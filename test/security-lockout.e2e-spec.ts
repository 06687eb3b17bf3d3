import request from 'supertest';
import {
  bearer,
  clientHeaders,
  createClient,
  createTestApp,
  createUser,
  TestApp,
  TestClient,
} from '@app/testing';

const TOKEN = '/oauth2/token';
const USERS = '/user-management/v1/user';
const EPA = '/auth/realms/epa-uat/protocol/openid-connect/token';
const ATTACKER = '203.0.113.7';
const OWNER = '198.51.100.2';
/** Failure window (s): short for the test, long enough for a burst of scrypt checks on a busy machine. */
const WINDOW_S = 8;

/**
 * Issue 16 item 2: failed client authentications throttle the source that fails, never the
 * owner of the client (docs/security.md). Sources are told apart by X-Forwarded-For, which the
 * app believes from loopback here (TRUST_PROXY=loopback), as it would behind a reverse proxy.
 */
describe('security: throttle attackers, never owners (e2e)', () => {
  let t: TestApp;
  let c: TestClient;
  beforeAll(async () => {
    t = await createTestApp({
      TRUST_PROXY: 'loopback',
      TOKEN_FAILURE_LIMIT: '5',
      AUTH_FAILURE_LIMIT_PER_ADDRESS: '12',
      AUTH_FAILURE_WINDOW: String(WINDOW_S),
      USER_MGMT_RATE_LIMIT: '4',
    });
    c = await createClient(t, { programs: ['epa'] });
  });
  afterAll(async () => t?.close());

  const tokenFrom = (address: string, secret: string, client = c) =>
    request(t.server)
      .post(EPA)
      .set('X-Forwarded-For', address)
      .type('form')
      .send({ grant_type: 'client_credentials', client_id: client.client_id, client_secret: secret });

  /** Waits for the start of a fresh failure window, so that a test's counts are its own. */
  const freshWindow = async () => {
    const ms = WINDOW_S * 1000 - (Date.now() % (WINDOW_S * 1000));
    await new Promise((r) => setTimeout(r, ms + 50));
  };

  it('25 wrong secrets lock the attacker out, not the owner (token, auth-code, users, FHIR)', async () => {
    await freshWindow();
    const statuses: number[] = [];
    for (let i = 0; i < 25; i++) statuses.push((await tokenFrom(ATTACKER, `guess-${i}`)).status);
    expect(statuses.slice(0, 5)).toEqual([401, 401, 401, 401, 401]);
    expect(new Set(statuses.slice(5))).toEqual(new Set([429]));
    const blocked = await tokenFrom(ATTACKER, 'guess-x');
    expect(Number(blocked.headers['retry-after'])).toBeGreaterThan(0);
    expect(Number(blocked.headers['retry-after'])).toBeLessThanOrEqual(WINDOW_S);

    // The owner, from its own address, with the right secret: every endpoint that checks it works.
    await tokenFrom(OWNER, c.client_secret).expect(200);
    const user = await request(t.server)
      .post(USERS)
      .set('X-Forwarded-For', OWNER)
      .send({ app_user_id: 'owner-user', client_id: c.client_id, client_secret: c.client_secret })
      .expect(200);
    const code = await request(t.server)
      .post(`${USERS}/auth-code`)
      .set('X-Forwarded-For', OWNER)
      .send({ app_user_id: 'owner-user', client_id: c.client_id, client_secret: c.client_secret })
      .expect(200);
    await request(t.server)
      .post(TOKEN)
      .set('X-Forwarded-For', OWNER)
      .type('form')
      .send({
        grant_type: 'authorization_code',
        code: code.body.code,
        client_id: c.client_id,
        client_secret: c.client_secret,
      })
      .expect(200);
    await request(t.server)
      .get('/r4/Patient')
      .set('X-Forwarded-For', OWNER)
      .set(clientHeaders(c, user.body.service_user_id))
      .expect(200);
  });

  it('the attacker address cannot verify the right secret either, unless this process just verified it', async () => {
    await freshWindow();
    const victim = await createClient(t, { programs: ['epa'] });
    const other = await createClient(t, { programs: ['epa'] });
    for (let i = 0; i < 5; i++) await tokenFrom(ATTACKER, `guess-${i}`, victim).expect(401);
    // another client from the same address: a pair count of its own
    await tokenFrom(ATTACKER, other.client_secret, other).expect(200);
    // never verified here: indistinguishable from a guess → 429 without a verification
    await tokenFrom(ATTACKER, victim.client_secret, victim).expect(429);
    // the owner verifies it from elsewhere; then the same secret passes from a shared address too
    await tokenFrom(OWNER, victim.client_secret, victim).expect(200);
    await tokenFrom(ATTACKER, victim.client_secret, victim).expect(200);
    await tokenFrom(ATTACKER, 'guess-y', victim).expect(429);
  });

  it('a source spraying many client ids is limited per address as well', async () => {
    await freshWindow();
    const ids = await Promise.all([1, 2, 3].map(() => createClient(t, { programs: ['epa'] })));
    const statuses: number[] = [];
    for (let i = 0; i < 15; i++) statuses.push((await tokenFrom(ATTACKER, `spray-${i}`, ids[i % 3])).status);
    expect(statuses.slice(0, 12).every((s) => s === 401)).toBe(true);
    expect(statuses.slice(12)).toEqual([429, 429, 429]);
    await tokenFrom(OWNER, ids[0].client_secret, ids[0]).expect(200);
  });

  it('windows are short: the source may try again once its window is over', async () => {
    await freshWindow();
    for (let i = 0; i < 5; i++) await tokenFrom(ATTACKER, `guess-${i}`).expect(401);
    await tokenFrom(ATTACKER, 'guess-5').expect(429);
    await freshWindow();
    await tokenFrom(ATTACKER, 'guess-6').expect(401);
  });

  it("an end user's token cannot spend the application's user-management allowance", async () => {
    const app = await createClient(t);
    const user = await createUser(t, app);
    const statuses: number[] = [];
    for (let i = 0; i < 6; i++)
      statuses.push((await request(t.server).get(USERS).set(bearer(user.access_token))).status);
    expect(statuses).toEqual([200, 200, 200, 200, 429, 429]);
    // the application itself still has its whole allowance (createUser above used one call)
    await request(t.server).get(USERS).set(clientHeaders(app, 'client')).expect(200);
  });
});
