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
  untilAdmitted,
} from '@app/testing';
import { ClientConcurrency } from '../src/admission/client-concurrency';
import { RequestAdmission } from '../src/admission/request-admission';
import { SETTINGS } from '../src/config/config.module';
import type { Settings } from '../src/config/settings';

const json = 'application/fhir+json';
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
/** Transactions each flood sends (besides the ones in flight when it stops). */
const TRANSACTIONS = 24;

/** A transaction of 20 small Observations: each costs the engine ~10–20 ms, under every per-request threshold. */
const transaction = JSON.stringify({
  resourceType: 'Bundle',
  type: 'transaction',
  entry: Array.from({ length: 20 }, (_, i) => ({
    resource: { resourceType: 'Observation', status: 'final', code: { text: `flood ${i}` } },
    request: { method: 'POST', url: 'Observation' },
  })),
});

/** Database time a client's commands took, summed (ms), and what its share was charged for them. */
interface Tally {
  served: number;
  charged: number;
}

/**
 * A write flood (docs/security.md "Database share by cost"): transactions of 20 entries, each
 * cheap enough per request to keep the whole database share and to run one at a time, sent from
 * several connections so that several always wait behind the client's own lane cap. While another
 * client contends, such a backlogged client keeps only CLIENT_COSTLY_DATABASE_SHARE_PERCENT of
 * its share (at the default 10 %, its database time is charged ten times over); the same transactions sent one at a
 * time, and the other client's reads, are charged their time. Counted where admission charges
 * each command (deterministic: no latency is compared); on the code before, every one of them was
 * charged its time, the flood's too.
 */
describe('security: a client flooding transactions keeps the costly part of its database share (e2e)', () => {
  let t: TestApp;
  let flooderClient: TestClient;
  let readerClient: TestClient;
  let flooder: TestUser;
  let reader: TestUser;
  const tallies = new Map<string, Tally>();

  beforeAll(async () => {
    // only the database share's charge is under test: nothing is refused (a share nobody reaches)
    t = await createTestApp({
      ...IDENTITY_TEST_ENV,
      CLIENT_MAX_CONCURRENT_REQUESTS: '100',
      CLIENT_RESPONSE_BYTES_PER_SECOND: '0',
      CLIENT_LOOP_MS_PER_SECOND: '0',
      CLIENT_DATABASE_MS_PER_SECOND: '10000000',
    });
    flooderClient = await createClient(t);
    flooder = await createUser(t, flooderClient);
    readerClient = await createClient(t);
    reader = await createUser(t, readerClient);
    const created = await untilAdmitted(() =>
      request(t.server)
        .put('/r4/Patient/reader')
        .set(bearer(reader.access_token))
        .set('Content-Type', json)
        .send(JSON.stringify({ resourceType: 'Patient', id: 'reader', name: [{ family: 'Reader' }] })),
    );
    expect(created.status).toBe(201);
    // each command's database time where admission charges it: the amount charged is its time
    // over the part of the share the client keeps (RequestAdmission.databaseShare of its lane)
    const concurrency = t.app.get(ClientConcurrency);
    const admission = t.app.get(RequestAdmission);
    const chargeWork = concurrency.chargeWork.bind(concurrency);
    jest.spyOn(concurrency, 'chargeWork').mockImplementation((clientId, user, unit, amount) => {
      const lane = clientId === flooderClient.client_id ? 'write' : 'read';
      const tally = tallies.get(clientId);
      if (unit === 'databaseMs' && tally) {
        tally.served += amount * admission.databaseShare(clientId, lane);
        tally.charged += amount;
      }
      chargeWork(clientId, user, unit, amount);
    });
  });
  afterAll(async () => t?.close());

  /**
   * The flooder sends TRANSACTIONS transactions from `connections` loops while the reader reads
   * one resource after another; returns the flooder's and the reader's tallies and answers.
   */
  async function flood(connections: number) {
    const flooded: Tally = { served: 0, charged: 0 };
    const read: Tally = { served: 0, charged: 0 };
    tallies.set(flooderClient.client_id, flooded);
    tallies.set(readerClient.client_id, read);
    const reads: request.Response[] = [];
    const writes: request.Response[] = [];
    let reading = true;
    const readerDone = (async () => {
      while (reading)
        reads.push(await request(t.server).get('/r4/Patient/reader').set(bearer(reader.access_token)));
    })();
    // the reader contends before the first transaction
    while (reads.length === 0) await sleep(10);
    let sent = 0;
    const loop = async () => {
      while (sent < TRANSACTIONS) {
        sent += 1;
        writes.push(
          await request(t.server)
            .post('/r4')
            .set(bearer(flooder.access_token))
            .set('Content-Type', json)
            .send(transaction),
        );
      }
    };
    await Promise.all(Array.from({ length: connections }, loop));
    reading = false;
    await readerDone;
    tallies.clear();
    return { flooded, read, reads, writes };
  }

  it('transactions from six connections are charged about 100 / CLIENT_COSTLY_DATABASE_SHARE_PERCENT times their database time (backlogged); one at a time, and the reader, their time', async () => {
    const floor = t.app.get<Settings>(SETTINGS).clientCostlyDatabaseSharePercent / 100;
    const backlog = await flood(6);
    expect(backlog.writes.map((res) => res.status)).toStrictEqual(backlog.writes.map(() => 200));
    expect(backlog.reads.filter((res) => res.status !== 200).map((res) => res.text)).toStrictEqual([]);
    expect(backlog.flooded.served).toBeGreaterThan(0);
    // all but the flood's last transactions ran with more than one waiting behind it: near 1 / floor
    expect(backlog.flooded.charged).toBeGreaterThan((0.6 / floor) * backlog.flooded.served);
    expect(backlog.flooded.charged).toBeLessThanOrEqual(backlog.flooded.served / floor + 1);
    // the reader (one request at a time, cheap) is charged its time
    expect(backlog.read.charged).toBeCloseTo(backlog.read.served, 3);

    // the same transactions one at a time keep the whole share (a transaction would need ~80 ms of
    // database time each, twice FULL_SHARE_COST_MS, to be charged 2×)
    const sequential = await flood(1);
    expect(sequential.writes.map((res) => res.status)).toStrictEqual(sequential.writes.map(() => 200));
    expect(sequential.reads.filter((res) => res.status !== 200).map((res) => res.text)).toStrictEqual([]);
    expect(sequential.flooded.served).toBeGreaterThan(0);
    expect(sequential.flooded.charged).toBeLessThan(2 * sequential.flooded.served);
  });
});
