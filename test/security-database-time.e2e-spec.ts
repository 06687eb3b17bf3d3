import { performance } from 'node:perf_hooks';
import request from 'supertest';
import {
  bearer,
  createClient,
  createTestApp,
  createUser,
  IDENTITY_TEST_ENV,
  TestApp,
  TestUser,
} from '@app/testing';

const json = 'application/fhir+json';
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Database time of writes is charged too (docs/security.md "The cost budget"), each command its
 * part of the engine's time (a processor-sharing clock): a client flooding the server with
 * transactions is refused 429 naming CLIENT_DATABASE_MS_PER_SECOND, while another client reading
 * at the same time is charged only its own small part and is never refused. Before, writes were
 * not charged at all (the flood went on), and a read was charged its wall-clock time, so a victim
 * whose reads were slowed by the flood paid for the flood's load.
 */
describe('security: database time of writes charged to the client (e2e)', () => {
  let t: TestApp;
  let attacker: TestUser;
  let victim: TestUser;
  beforeAll(async () => {
    t = await createTestApp({ ...IDENTITY_TEST_ENV, CLIENT_DATABASE_MS_PER_SECOND: '200' });
    attacker = await createUser(t, await createClient(t));
    victim = await createUser(t, await createClient(t));
    await request(t.server)
      .put('/r4/Patient/victim')
      .set(bearer(victim.access_token))
      .set('Content-Type', json)
      .send(JSON.stringify({ resourceType: 'Patient', id: 'victim', name: [{ family: 'Victim' }] }))
      .expect(201);
  });
  afterAll(async () => t?.close());

  /** A transaction of 20 new Observations: small to send and to answer, many commands to run. */
  const transaction = JSON.stringify({
    resourceType: 'Bundle',
    type: 'transaction',
    entry: Array.from({ length: 20 }, (_, i) => ({
      resource: { resourceType: 'Observation', status: 'final', code: { text: `flood ${i}` } },
      request: { method: 'POST', url: 'Observation' },
    })),
  });

  it('a client flooding transactions gets 429 naming CLIENT_DATABASE_MS_PER_SECOND; the reading client is served throughout and never refused', async () => {
    const until = performance.now() + 6_000;
    const flood: request.Response[] = [];
    const writer = async () => {
      while (performance.now() < until) {
        const res = await request(t.server)
          .post('/r4')
          .set(bearer(attacker.access_token))
          .set('Content-Type', json)
          .set('Prefer', 'return=minimal')
          .send(transaction);
        flood.push(res);
        if (res.status === 429) await sleep(100);
      }
    };
    const reads: request.Response[] = [];
    // an ordinary client: a read every 250 ms. On a machine loaded by other processes a read's part
    // of the engine's time stretches with its wall time; up to 50 ms each stays within 200 ms/s.
    const reader = async () => {
      while (performance.now() < until) {
        reads.push(await request(t.server).get('/r4/Patient/victim').set(bearer(victim.access_token)));
        await sleep(250);
      }
    };
    await Promise.all([reader(), ...Array.from({ length: 6 }, writer)]);
    const refused = flood.filter((res) => res.status === 429);
    expect(
      flood.filter((res) => res.status !== 200 && res.status !== 429).map((res) => res.text),
    ).toStrictEqual([]);
    expect(refused.length).toBeGreaterThan(0);
    expect(refused[0].body.issue[0].diagnostics).toMatch(/CLIENT_DATABASE_MS_PER_SECOND/);
    expect(Number(refused[0].headers['retry-after'])).toBeGreaterThanOrEqual(1);
    expect(reads.length).toBeGreaterThan(0);
    expect(reads.filter((res) => res.status !== 200).map((res) => [res.status, res.text])).toStrictEqual([]);
  });
});
