import request from 'supertest';
import { createClient, createTestApp, TestApp } from '@app/testing';
import * as secretHash from '../src/modules/auth/clients/secret-hash';

const EPA = '/auth/realms/epa-uat/protocol/openid-connect/token';
const LIMIT = 20;

/** Secrets verified by the app in this process (one scrypt run each), counted at the module's export. */
const verifications = jest.spyOn(secretHash, 'verifySecret');
const secretVerificationCount = () => verifications.mock.calls.length;

/**
 * Wrong-secret floods (docs/security.md "Throttling failed client authentication"): a failure slot
 * is taken before a secret is verified, so however many guesses arrive at once, no more than the
 * limit are verified (scrypt runs counted in the process); the rest are refused from memory.
 */
describe('security: concurrent wrong secrets verify at most the limit (e2e)', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp({
      TRUST_PROXY: 'loopback',
      TOKEN_FAILURE_LIMIT: String(LIMIT),
      AUTH_FAILURE_LIMIT_PER_ADDRESS: '1000',
      AUTH_FAILURE_WINDOW: '3600',
    });
  });
  afterAll(async () => t?.close());

  const flood = async (n: number, address: string) => {
    const victim = await createClient(t, { programs: ['epa'] });
    const before = secretVerificationCount();
    const answers = await Promise.all(
      Array.from({ length: n }, (_, i) =>
        request(t.server)
          .post(EPA)
          .set('X-Forwarded-For', address)
          .type('form')
          .send({
            grant_type: 'client_credentials',
            client_id: victim.client_id,
            client_secret: `guess-${i}`,
          }),
      ),
    );
    return {
      verified: secretVerificationCount() - before,
      statuses: answers.map((a) => a.status),
      victim,
    };
  };

  it.each([64, 200])(`%i at once from one address → at most ${LIMIT} verifications`, async (n) => {
    const { verified, statuses, victim } = await flood(n, `203.0.113.${n % 250}`);
    expect(verified).toBeLessThanOrEqual(LIMIT);
    expect(statuses.filter((s) => s === 401)).toHaveLength(verified);
    // the rest are refused (a 503 only when the shared machine makes the database miss its deadline)
    expect(statuses.filter((s) => s !== 401 && s !== 429 && s !== 503)).toEqual([]);
    expect(statuses.filter((s) => s === 429).length).toBeGreaterThanOrEqual(
      n - LIMIT - statuses.filter((s) => s === 503).length,
    );
    // the owner, from its own address, is not refused
    await request(t.server)
      .post(EPA)
      .set('X-Forwarded-For', '198.51.100.9')
      .type('form')
      .send({
        grant_type: 'client_credentials',
        client_id: victim.client_id,
        client_secret: victim.client_secret,
      })
      .expect(200);
  });

  it('a throttled source is refused without another verification, also with the right secret', async () => {
    const { victim } = await flood(30, '203.0.113.77');
    const before = secretVerificationCount();
    const again = await request(t.server).post(EPA).set('X-Forwarded-For', '203.0.113.77').type('form').send({
      grant_type: 'client_credentials',
      client_id: victim.client_id,
      client_secret: victim.client_secret,
    });
    expect(again.status).toBe(429);
    expect(secretVerificationCount()).toBe(before);
  });
});
