import request from 'supertest';
import {
  bearer,
  createClient,
  createTestApp,
  createUser,
  IDENTITY_TEST_ENV,
  seedWordObservations,
  TestApp,
  TestClient,
  TestUser,
} from '@app/testing';
import type { LaneTicket } from '../src/admission/admission-lane';
import { ClientConcurrency } from '../src/admission/client-concurrency';
import { RequestAdmission } from '../src/admission/request-admission';

const json = 'application/fhir+json';
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * The first wave of a costly client (docs/security.md "Lane slots by cost"): a client that opens
 * many connections at once used to fill every read slot before any charge refused it (its work is
 * charged after it is done), and eight slow queries on a two-core engine starved another client's
 * one query. While another client contends, a client holds the slots its expected database time
 * allows (AdmissionLane.contendedCap): one while it is not known yet, so its first wave runs one
 * request until one is answered, its other requests waiting behind it. Alone it still uses every
 * slot (work-conserving). What is counted here is deterministic: how many of the attacker's
 * requests held a read slot at once, observed where FhirAdmission takes and gives back its slots.
 */
describe('security: lane slots held by a costly client while another contends (e2e)', () => {
  let t: TestApp;
  let attackerClient: TestClient;
  let attacker: TestUser;
  let victim: TestUser;
  /** Slots each client holds now, the most it held at once, and its answered requests. */
  const holding = new Map<string, number>();
  const most = new Map<string, number>();
  const answered = new Map<string, number>();
  /** The most the attacker held at once before its first request was answered. */
  let mostBeforeFirstAnswer = 0;

  beforeAll(async () => {
    // only the lanes are under test: the in-flight cap and the database share refuse nothing here
    t = await createTestApp({
      ...IDENTITY_TEST_ENV,
      CLIENT_MAX_CONCURRENT_REQUESTS: '100',
      CLIENT_DATABASE_MS_PER_SECOND: '0',
      SERVER_MAX_CONCURRENT_READS: '8',
    });
    attackerClient = await createClient(t);
    attacker = await createUser(t, attackerClient);
    victim = await createUser(t, await createClient(t));
    await request(t.server)
      .put('/r4/Patient/victim')
      .set(bearer(victim.access_token))
      .set('Content-Type', json)
      .send(JSON.stringify({ resourceType: 'Patient', id: 'victim', name: [{ family: 'Victim' }] }))
      .expect(201);
    // what the attacker's slow searches scan: 300 Observations of words
    await seedWordObservations(t, attacker.access_token);
    // counts the slots each client holds, where admission takes them and gives them back
    const admission = t.app.get(RequestAdmission);
    const enter = admission.enter.bind(admission);
    const held = (clientId: string, ticket: LaneTicket): LaneTicket => {
      const now = (holding.get(clientId) ?? 0) + 1;
      holding.set(clientId, now);
      most.set(clientId, Math.max(most.get(clientId) ?? 0, now));
      if (clientId === attackerClient.client_id && !answered.has(clientId))
        mostBeforeFirstAnswer = Math.max(mostBeforeFirstAnswer, now);
      let released = false;
      return {
        release: (databaseMs?: number) => {
          if (!released) {
            released = true;
            holding.set(clientId, holding.get(clientId)! - 1);
            answered.set(clientId, (answered.get(clientId) ?? 0) + 1);
          }
          ticket.release(databaseMs);
        },
      };
    };
    jest.spyOn(admission, 'enter').mockImplementation((clientId, lane, res) => {
      const entered = enter(clientId, lane, res);
      if (entered === undefined) return entered;
      return entered instanceof Promise
        ? entered.then((ticket) => held(clientId, ticket))
        : held(clientId, entered);
    });
  });
  afterAll(async () => t?.close());

  beforeEach(() => {
    most.clear();
    answered.clear();
    mostBeforeFirstAnswer = 0;
  });

  /** A search that scans every Observation for 100 absent prefixes: slow, and an empty answer. */
  const slowSearch = () =>
    request(t.server)
      .get(`/r4/Observation?_content=${Array.from({ length: 100 }, (_, i) => `zz${i}`).join(',')}`)
      .set(bearer(attacker.access_token));

  it("a costly client's first wave of 16 slow searches runs one at a time while another client reads back to back; the reader is never refused", async () => {
    const reads: request.Response[] = [];
    let attacking = true;
    // an ordinary client reading one resource after another for the whole attack
    const reader = async () => {
      while (attacking)
        reads.push(await request(t.server).get('/r4/Patient/victim').set(bearer(victim.access_token)));
    };
    const reading = reader();
    await sleep(50);
    const wave = await Promise.all(Array.from({ length: 16 }, slowSearch));
    attacking = false;
    await reading;
    // every search is answered (its wait is behind its own client, well under DB_TIMEOUT_MS here)
    // or told to come back naming the limit; never a 503 of a busy server
    expect(
      wave.filter((res) => res.status !== 200 && res.status !== 429).map((res) => [res.status, res.text]),
    ).toStrictEqual([]);
    for (const refused of wave.filter((res) => res.status === 429)) {
      expect(refused.headers['retry-after']).toBe('1');
      expect(refused.body.issue[0].diagnostics).toMatch(/runs \d+ at a time/);
    }
    // before: all eight read slots at once, before any of them was answered
    expect(mostBeforeFirstAnswer).toBe(1);
    // the costly client stays at a few slots (its expected time per search over 20 ms of budget)
    expect(most.get(attackerClient.client_id)).toBeLessThanOrEqual(4);
    expect(reads.length).toBeGreaterThan(0);
    expect(reads.filter((res) => res.status !== 200).map((res) => [res.status, res.text])).toStrictEqual([]);
  });

  it('the same client alone on the server uses every read slot at once (work-conserving)', async () => {
    // nobody else has a request in flight or had one within the activity window (the reader of
    // the test before ended its last read just now): waits until the rule itself says so
    const concurrency = t.app.get(ClientConcurrency);
    for (let waited = 0; concurrency.anotherClientActive(attackerClient.client_id); waited += 100) {
      if (waited > 10_000) throw new Error('another client still counts as active after 10 s');
      await sleep(100);
    }
    const wave = await Promise.all(Array.from({ length: 16 }, slowSearch));
    expect(wave.map((res) => res.status)).toEqual(Array(16).fill(200));
    expect(most.get(attackerClient.client_id)).toBe(8);
  });
});
