import { performance } from 'node:perf_hooks';
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
import { ClientConcurrency } from '../src/admission/client-concurrency';
import { RequestAdmission } from '../src/admission/request-admission';
import { SETTINGS } from '../src/config/config.module';
import type { Settings } from '../src/config/settings';

const json = 'application/fhir+json';
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
/**
 * The database share under test (ms per second, a burst of one second's worth): twice what
 * processor sharing can charge a client sending one request at a time (at most the wall time).
 */
const SHARE_MS = 2000;

/**
 * The database share by cost (docs/security.md "Database share by cost"): while another client
 * contends, a client whose requests cost more than FULL_SHARE_COST_MS of database time each keeps
 * only a part of CLIENT_DATABASE_MS_PER_SECOND, as the lanes give it fewer slots; a client of cheap
 * requests keeps all of it. Deterministic with equal shares (CLIENT_COSTLY_DATABASE_SHARE_PERCENT=100,
 * as before): processor sharing charges a client sending one request at a time at most the wall
 * time (each of its commands its part of the engine's time), so at a share of SHARE_MS (2000 ms a
 * second) it is never refused, however slow its searches (one search's time under 2 s). Now its
 * slow searches count up to four times their time and it is refused; the reader never is.
 */
describe('security: a client of costly requests keeps a smaller database share while another contends (e2e)', () => {
  let t: TestApp;
  let costlyClient: TestClient;
  let costly: TestUser;
  let cheap: TestUser;
  /** Database time of the costly client's commands, summed (ms), and what its share was charged for them. */
  let served = 0;
  let charged = 0;

  beforeAll(async () => {
    // only the database share is under test: the in-flight cap, the byte and loop shares refuse nothing
    t = await createTestApp({
      ...IDENTITY_TEST_ENV,
      CLIENT_MAX_CONCURRENT_REQUESTS: '100',
      CLIENT_RESPONSE_BYTES_PER_SECOND: '0',
      CLIENT_LOOP_MS_PER_SECOND: '0',
      CLIENT_DATABASE_MS_PER_SECOND: String(SHARE_MS),
    });
    costlyClient = await createClient(t);
    costly = await createUser(t, costlyClient);
    cheap = await createUser(t, await createClient(t));
    await request(t.server)
      .put('/r4/Patient/cheap')
      .set(bearer(cheap.access_token))
      .set('Content-Type', json)
      .send(JSON.stringify({ resourceType: 'Patient', id: 'cheap', name: [{ family: 'Cheap' }] }))
      .expect(201);
    // what the costly client's slow searches scan: 3,600 Observations of words (each search well
    // over FULL_SHARE_COST_MS of database time, also on a quiet machine)
    for (let copy = 0; copy < 12; copy++) await seedWordObservations(t, costly.access_token);
    // each database command's time, where admission charges it to the caller's share: the amount
    // charged is the command's time over the part of the share the client keeps (its read lane's)
    const concurrency = t.app.get(ClientConcurrency);
    const admission = t.app.get(RequestAdmission);
    const chargeWork = concurrency.chargeWork.bind(concurrency);
    jest.spyOn(concurrency, 'chargeWork').mockImplementation((clientId, user, unit, amount) => {
      if (clientId === costlyClient.client_id && unit === 'databaseMs') {
        served += amount * admission.databaseShare(clientId, 'read');
        charged += amount;
      }
      chargeWork(clientId, user, unit, amount);
    });
  });
  afterAll(async () => t?.close());

  /** A search that scans every Observation for 100 absent prefixes: slow, and an empty answer. */
  const slowSearch = () =>
    request(t.server)
      .get(`/r4/Observation?_content=${Array.from({ length: 100 }, (_, i) => `zz${i}`).join(',')}`)
      .set(bearer(costly.access_token));

  it('a client looping slow searches one at a time is refused, which equal shares never do, while a client reading back to back is never refused', async () => {
    // alone on the server (nothing charged), the read lane learns what the costly client's searches
    // cost, so each of them below is charged at its part of the share, the first one too
    const concurrency = t.app.get(ClientConcurrency);
    for (let waited = 0; concurrency.anotherClientActive(costlyClient.client_id); waited += 100) {
      if (waited > 10_000) throw new Error('another client still counts as active after 10 s');
      await sleep(100);
    }
    for (let i = 0; i < 2; i++) expect((await slowSearch()).status).toBe(200);
    expect(t.app.get(RequestAdmission).databaseShare(costlyClient.client_id, 'read')).toBeLessThan(1);
    served = 0;
    charged = 0;
    const reads: request.Response[] = [];
    let reading = true;
    // the cheap client reads one resource after another for the whole test: it contends throughout
    const reader = async () => {
      while (reading)
        reads.push(await request(t.server).get('/r4/Patient/cheap').set(bearer(cheap.access_token)));
    };
    const readerDone = reader();
    await sleep(50);
    // one search at a time (a lane runs a costly client's searches one at a time anyway), until
    // the first refusal or 15 s
    const searches: request.Response[] = [];
    let servedBeforeRefusal: number | undefined;
    let chargedBeforeRefusal: number | undefined;
    const until = performance.now() + 15_000;
    while (performance.now() < until) {
      const res = await slowSearch();
      searches.push(res);
      if (res.status === 429) {
        servedBeforeRefusal = served;
        chargedBeforeRefusal = charged;
        break;
      }
    }
    reading = false;
    await readerDone;
    expect(
      searches.filter((res) => res.status !== 200 && res.status !== 429).map((res) => res.text),
    ).toStrictEqual([]);
    const refusal = searches[searches.length - 1];
    expect(refusal.status).toBe(429);
    expect(refusal.body.issue[0].diagnostics).toMatch(
      /CLIENT_DATABASE_MS_PER_SECOND.*CLIENT_COSTLY_DATABASE_SHARE_PERCENT/,
    );
    expect(Number(refusal.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    // its searches were charged more than their time (a smaller share), at most 1 / the floor
    expect(chargedBeforeRefusal).toBeGreaterThan(servedBeforeRefusal!);
    const floor = t.app.get<Settings>(SETTINGS).clientCostlyDatabaseSharePercent / 100;
    expect(chargedBeforeRefusal).toBeLessThanOrEqual(servedBeforeRefusal! / floor + 1);
    expect(reads.length).toBeGreaterThan(0);
    expect(reads.filter((res) => res.status !== 200).map((res) => [res.status, res.text])).toStrictEqual([]);
  });
});
