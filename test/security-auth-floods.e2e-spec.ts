import request from 'supertest';
import { createClient, createTestApp, TestApp } from '@app/testing';
import { ClientsRepository } from '../src/modules/auth/clients/clients.repository';
import * as scryptSecret from '../src/modules/auth/clients/scrypt-secret';
import * as secretHash from '../src/modules/auth/clients/secret-hash';
import { FAILURE_PACE_MS, UNPACED_FAILURES } from '../src/modules/auth/rate-limit/failure-pacing';

const EPA = '/auth/realms/epa-uat/protocol/openid-connect/token';
/** The window's failure limit of the first describe: below UNPACED_FAILURES, so the slots alone bound it. */
const LIMIT = UNPACED_FAILURES - 1;

/** Secrets verified by the app in this process (any stored format), counted at the module's export. */
const verifications = jest.spyOn(secretHash, 'verifySecret');
const secretVerificationCount = () => verifications.mock.calls.length;
/** Of those, the scrypt ones (a legacy client hash): new clients' digests must never run one. */
const scryptRuns = jest.spyOn(scryptSecret, 'scryptMatches');
const scryptRunCount = () => scryptRuns.mock.calls.length;

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
    const scryptBefore = scryptRunCount();
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
      scrypt: scryptRunCount() - scryptBefore,
      statuses: answers.map((a) => a.status),
      victim,
    };
  };

  it.each([64, 200])(`%i at once from one address → at most ${LIMIT} verifications`, async (n) => {
    const { verified, scrypt, statuses, victim } = await flood(n, `203.0.113.${n % 250}`);
    expect(verified).toBeLessThanOrEqual(LIMIT);
    expect(verified).toBeGreaterThan(0);
    // a new client's secret is a SHA-256 digest: verified in microseconds, no scrypt at all
    expect(scrypt).toBe(0);
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

/**
 * Past UNPACED_FAILURES an address verifies one wrong secret per FAILURE_PACE_MS (FailurePacing):
 * a burst costs that many scrypt runs, not the window's limit, and later guesses come one a second.
 */
describe('security: wrong secrets from one address are paced (e2e)', () => {
  const WINDOW_LIMIT = 20;
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp({
      TRUST_PROXY: 'loopback',
      TOKEN_FAILURE_LIMIT: String(WINDOW_LIMIT),
      AUTH_FAILURE_LIMIT_PER_ADDRESS: '1000',
      AUTH_FAILURE_WINDOW: '3600',
    });
  });
  afterAll(async () => t?.close());

  const token = (address: string, clientId: string, secret: string) =>
    request(t.server)
      .post(EPA)
      .set('X-Forwarded-For', address)
      .type('form')
      .send({ grant_type: 'client_credentials', client_id: clientId, client_secret: secret });

  it(`64 wrong secrets at once verify ${UNPACED_FAILURES}, then one per pace; the owner elsewhere is served`, async () => {
    const address = '203.0.113.201';
    const client = await createClient(t, { programs: ['epa'] });
    const before = secretVerificationCount();
    const scryptBefore = scryptRunCount();
    const burst = await Promise.all(
      Array.from({ length: 64 }, (_, i) => token(address, client.client_id, `guess-${i}`)),
    );
    const verified = secretVerificationCount() - before;
    // a straggler reaching the server a whole pace after the burst's last failure may verify one more
    expect(verified).toBeGreaterThanOrEqual(UNPACED_FAILURES);
    expect(verified).toBeLessThanOrEqual(UNPACED_FAILURES + 1);
    const statuses = burst.map((a) => a.status);
    expect(statuses.filter((s) => s === 401)).toHaveLength(verified);
    expect(statuses.filter((s) => s !== 401 && s !== 429 && s !== 503)).toEqual([]);

    // right away: refused without a verification, told to come back after the pace
    const early = secretVerificationCount();
    const paced = await token(address, client.client_id, 'guess-now');
    expect(paced.status).toBe(429);
    expect(paced.headers['retry-after']).toBe(String(Math.ceil(FAILURE_PACE_MS / 1000)));
    expect(secretVerificationCount()).toBe(early);

    // after the pace: exactly one more guess is verified, the next is paced again
    await new Promise((resolve) => setTimeout(resolve, FAILURE_PACE_MS + 100));
    const next = await Promise.all([1, 2, 3].map((i) => token(address, client.client_id, `later-${i}`)));
    expect(next.map((a) => a.status).sort()).toEqual([401, 429, 429]);
    expect(secretVerificationCount()).toBe(early + 1);

    // the owner, from its own address, is verified at once
    await token('198.51.100.20', client.client_id, client.client_secret).expect(200);
    // every verification of the flood was a digest: no scrypt run
    expect(scryptRunCount()).toBe(scryptBefore);
  });

  it(`a client still stored as scrypt is paced the same: ${UNPACED_FAILURES} scrypt runs for a burst of 32`, async () => {
    const address = '203.0.113.202';
    const client = await createClient(t, { programs: ['epa'] });
    const repo = t.app.get(ClientsRepository);
    expect(
      await repo.setSecretHash(client.client_id, await secretHash.hashChosenSecret(client.client_secret)),
    ).toBe(true);
    const before = secretVerificationCount();
    const scryptBefore = scryptRunCount();
    const burst = await Promise.all(
      Array.from({ length: 32 }, (_, i) => token(address, client.client_id, `guess-${i}`)),
    );
    const verified = secretVerificationCount() - before;
    expect(verified).toBeGreaterThanOrEqual(UNPACED_FAILURES);
    expect(verified).toBeLessThanOrEqual(UNPACED_FAILURES + 1);
    expect(scryptRunCount() - scryptBefore).toBe(verified);
    const statuses = burst.map((a) => a.status);
    expect(statuses.filter((s) => s === 401)).toHaveLength(verified);
    expect(statuses.filter((s) => s !== 401 && s !== 429 && s !== 503)).toEqual([]);
    // the wrong secrets left the legacy hash as it was; the owner is served (and its hash rewritten)
    await token('198.51.100.21', client.client_id, client.client_secret).expect(200);
    expect((await repo.findWithHash(client.client_id))!.secretHash).toBe(
      secretHash.hashGeneratedSecret(client.client_secret),
    );
  });
});
