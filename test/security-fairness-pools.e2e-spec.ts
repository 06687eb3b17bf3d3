import request from 'supertest';
import {
  bearer,
  callsDuring,
  catastrophicFhirPath,
  createClient,
  createTestApp,
  createUser,
  IDENTITY_TEST_ENV,
  createFemalePatient,
  patchGender,
  TestApp,
  TestClient,
  TestUser,
} from '@app/testing';
import { probeFhirPathWorkers, type FhirPathWorkerProbe } from '@app/testing/fhirpath-worker-probe';
import { ClientConcurrency } from '../src/admission/client-concurrency';
import { FhirPathTurns } from '../src/admission/fhirpath-turns';
import { TenantResolver } from '../src/tenancy/tenant-resolver';

const json = 'application/fhir+json';

const catastrophic = catastrophicFhirPath(29);

/**
 * The FHIRPath worker pool is shared by every tenant: one client's costly expressions must wait
 * behind its own work, not in front of another client's patches (docs/security.md "The cost
 * budget"). Measured as queue position: how many of the costly client's evaluations ended while
 * the other client's patch waited. First-come (before): all the costly ones queued ahead of it.
 */
describe('security: the FHIRPath worker pool is shared fairly (e2e)', () => {
  let t: TestApp;
  let heavy: TestUser;
  let victim: TestUser;
  beforeAll(async () => {
    t = await createTestApp({
      ...IDENTITY_TEST_ENV,
      // wide lanes and no worker-time share: only the pool's own queue orders the evaluations
      SERVER_MAX_CONCURRENT_WRITES: '32',
      CLIENT_WORKER_MS_PER_SECOND: '0',
      FHIRPATH_WORKERS: '2',
      // an ordinary evaluation on a loaded machine stays far within it; the costly ones never end
      FHIRPATH_TIMEOUT_MS: '1000',
    });
    heavy = await createUser(t, await createClient(t));
    victim = await createUser(t, await createClient(t));
  });
  afterAll(async () => t?.close());

  const create = (user: TestUser) => createFemalePatient(t, user);
  const patch = (user: TestUser, id: string, path: string) => patchGender(t, user, id, path);

  it("another client's ordinary patch waits for at most the pool's workers, not behind 8 costly evaluations", async () => {
    const heavyIds: string[] = [];
    for (let i = 0; i < 8; i++) heavyIds.push(await create(heavy));
    const victimId = await create(victim);
    await patch(victim, victimId, 'Patient.gender').expect(200); // warm
    let costlyEnded = 0;
    const costly = heavyIds.map((id) =>
      patch(heavy, id, catastrophic).then((res) => {
        costlyEnded += 1;
        return res;
      }),
    );
    // the costly ones are all in the server (the first of them has ended: the rest wait)
    while (costlyEnded === 0) await new Promise((resolve) => setTimeout(resolve, 20));
    const endedBefore = costlyEnded;
    const ordinary = await patch(
      victim,
      victimId,
      "Patient.where(gender = 'female' or gender = 'male').gender",
    );
    const endedWhileWaiting = costlyEnded - endedBefore;
    const answers = await Promise.all(costly);
    expect([ordinary.status, ordinary.body.issue]).toEqual([200, undefined]);
    expect(answers.map((r) => r.status)).toEqual(answers.map(() => 422));
    // two workers: at most the two running, and one more that started as the patch arrived
    expect(endedWhileWaiting).toBeLessThanOrEqual(3);
  });
});

/**
 * A FHIRPath cut at its deadline has its worker terminated, and the worker's replacement boots
 * (about 1 s of workerpool's clean-up wait, then the boot, seconds on a loaded machine). While one
 * client's costly patches keep doing that, another client's ordinary patches must never be handed
 * to a worker still booting. Before, a costly evaluation's turn ended at its deadline, and the
 * other client's next evaluation went to the terminated worker's booting replacement. Counted
 * inside workerpool (where each evaluation was handed), not timed: the counts do not depend on the
 * machine's load.
 */
describe("security: one client's FHIRPath reboots never hold another's patches (e2e)", () => {
  let t: TestApp;
  let heavy: TestUser;
  let heavyClient: TestClient;
  let victim: TestUser;
  let probe: FhirPathWorkerProbe | undefined;
  // the path ends in `.gender`: the sandbox evaluates its parent (patch.ts locates the element through it)
  const victimSelects = "Patient.where(gender = 'female' or gender = 'male')";
  const ordinary = `${victimSelects}.gender`;
  /** Whether the test's loops keep sending (stopped by afterAll too, should the test time out). */
  let attacking = false;
  beforeAll(async () => {
    t = await createTestApp({
      ...IDENTITY_TEST_ENV,
      // wide lanes and no shares: only the pool's own rules decide who runs where
      SERVER_MAX_CONCURRENT_WRITES: '32',
      CLIENT_WORKER_MS_PER_SECOND: '0',
      CLIENT_DATABASE_MS_PER_SECOND: '0',
      CLIENT_LOOP_MS_PER_SECOND: '0',
      FHIRPATH_WORKERS: '2',
      // an ordinary evaluation on a loaded machine stays far within it; the costly ones never end
      FHIRPATH_TIMEOUT_MS: '500',
    });
    heavyClient = await createClient(t);
    heavy = await createUser(t, heavyClient);
    victim = await createUser(t, await createClient(t));
  });
  afterAll(async () => {
    attacking = false;
    probe?.restore();
    await t?.close();
  });

  const create = (user: TestUser) => createFemalePatient(t, user);
  const patch = (user: TestUser, id: string, path: string) => patchGender(t, user, id, path);
  /** Waits until `condition` holds (never a sleep racing a server-side window), failing after 20 s. */
  const until = async (what: string, condition: () => boolean) => {
    const failAt = Date.now() + 20_000;
    while (!condition()) {
      if (Date.now() > failAt) throw new Error(`never saw: ${what}`);
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  };

  it("while one client's costly patches are cut at their deadline and their workers reboot, another client's patches never go to a booting worker", async () => {
    probe = probeFhirPathWorkers((expression) => expression === victimSelects);
    const victimId = await create(victim);
    const heavyIds = [await create(heavy), await create(heavy)];
    // every worker booted before the attack (the first evaluation starts them all)
    await Promise.all(heavyIds.map((id) => patch(heavy, id, 'Patient.gender').expect(200)));
    await until('every worker booted', () => probe!.created >= 2 && probe!.booting === 0);
    // the costly client alone on the server (the victim's set-up is over): it may use every worker
    const concurrency = t.app.get(ClientConcurrency);
    await until('the costly client alone', () => !concurrency.anotherClientActive(heavyClient.client_id));

    attacking = true;
    const victimStatuses: number[] = [];
    const costly: number[] = [];
    let victimLoop: Promise<void> = Promise.resolve();
    try {
      // two loops of costly patches, until at least two workers were cut and rebooted while the
      // victim patched (at most 6 costly patches: the condition not met fails below)
      let sent = 0;
      const enough = () => probe!.cut >= 2 && probe!.handedDuringReboot >= 2;
      const attacker = async (id: string) => {
        while (attacking && !enough() && sent < 6) {
          sent += 1;
          costly.push((await patch(heavy, id, catastrophic)).status);
        }
      };
      const attack = Promise.all(heavyIds.map(attacker));
      // the victim comes while the costly patches hold every worker, and patches back to back
      const turns = t.app.get(FhirPathTurns);
      await until('the costly patches on every worker', () => turns.load.running === 2);
      victimLoop = (async () => {
        while (attacking) victimStatuses.push((await patch(victim, victimId, ordinary)).status);
      })();
      await attack;
      // the last cut worker's replacement is up before the victim stops
      await until('every cut worker rebooted', () => probe!.rebooting === 0);
    } finally {
      attacking = false;
      await victimLoop;
    }

    expect(costly.length).toBeGreaterThan(0);
    expect(costly.filter((status) => status !== 422)).toEqual([]);
    expect(victimStatuses.filter((status) => status !== 200)).toEqual([]);
    // the victim patched all along the reboots (the test saw what it claims)
    expect(probe.handed).toBe(victimStatuses.length);
    expect(probe.cut).toBeGreaterThanOrEqual(2);
    expect(probe.handedDuringReboot).toBeGreaterThanOrEqual(2);
    // and none of its evaluations was handed to a worker still booting
    expect(probe.handedToBooting).toBe(0);
  }, 30_000);
});

/**
 * Within a client, one end user's flood is charged to that user first (bearer tokens are per
 * user): the app's other users keep their share. Before, a user ignoring Retry-After drove the
 * client's one share up to 30 s into debt, and every user of the app was refused for that long.
 */
describe("security: one user's flood is charged to that user, not to the app's other users (e2e)", () => {
  let t: TestApp;
  let app: TestClient;
  let flooder: TestUser;
  let neighbour: TestUser;
  beforeAll(async () => {
    t = await createTestApp({
      ...IDENTITY_TEST_ENV,
      CLIENT_RESPONSE_BYTES_PER_SECOND: '20kb',
      CLIENT_MAX_CONCURRENT_REQUESTS: '8',
    });
    app = await createClient(t);
    flooder = await createUser(t, app);
    neighbour = await createUser(t, app);
    const large = {
      resourceType: 'Patient',
      id: 'large',
      text: {
        status: 'generated',
        div: `<div xmlns="http://www.w3.org/1999/xhtml">${'x'.repeat(40_000)}</div>`,
      },
    };
    await request(t.server)
      .put('/r4/Patient/large')
      .set(bearer(flooder.access_token))
      .set('Prefer', 'return=minimal')
      .set('Content-Type', json)
      .send(JSON.stringify(large))
      .expect(201);
    await request(t.server)
      .put('/r4/Patient/small')
      .set(bearer(neighbour.access_token))
      .set('Prefer', 'return=minimal')
      .set('Content-Type', json)
      .send(JSON.stringify({ resourceType: 'Patient', id: 'small' }))
      .expect(201);
  });
  afterAll(async () => t?.close());

  const read = (user: TestUser, id: string) =>
    request(t.server).get(`/r4/Patient/${id}`).set(bearer(user.access_token));

  it("while a user floods GET of its large Patient ignoring Retry-After, the app's other user reading at the same time is never refused", async () => {
    // the neighbour is active when the flood starts (its part of the share is its own from then on)
    await read(neighbour, 'small').expect(200);
    let flooding = true;
    const neighbourStatuses: number[] = [];
    const neighbourLoop = (async () => {
      // paced well within its own part (10 kB/s of a ~300-byte answer)
      while (flooding) {
        neighbourStatuses.push((await read(neighbour, 'small')).status);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    })();
    const floodStatuses: number[] = [];
    for (let burst = 0; burst < 5; burst++) {
      const answers = await Promise.all(Array.from({ length: 20 }, () => read(flooder, 'large')));
      floodStatuses.push(...answers.map((r) => r.status));
    }
    flooding = false;
    await neighbourLoop;
    // the flood was refused (its part spent), and charged to the flooder alone
    expect(floodStatuses.filter((s) => s === 429).length).toBeGreaterThan(50);
    expect(neighbourStatuses.length).toBeGreaterThan(0);
    expect(neighbourStatuses.filter((s) => s !== 200)).toEqual([]);
  });

  it('a user looping GET of its large Patient ignoring Retry-After: refused for long; the neighbour user is served within 2.5 s', async () => {
    // the flood: bursts of 40 reads at once, each burst back at once whatever Retry-After says
    const statuses: number[] = [];
    for (let burst = 0; burst < 5; burst++) {
      const answers = await Promise.all(Array.from({ length: 40 }, () => read(flooder, 'large')));
      statuses.push(...answers.map((r) => r.status));
    }
    expect(statuses.filter((s) => s !== 200 && s !== 429)).toEqual([]);
    expect(statuses.filter((s) => s === 429).length).toBeGreaterThan(150);
    const refused = await read(flooder, 'large').expect(429);
    expect(Number(refused.headers['retry-after'])).toBeGreaterThan(5);
    // the client's own share went at most 2 s into debt for it
    await new Promise((resolve) => setTimeout(resolve, 2_500));
    const served = await read(neighbour, 'small');
    expect(served.status).toBe(200);
    const still = await read(flooder, 'large').expect(429);
    expect(still.body.issue[0].diagnostics).toMatch(/this user .*CLIENT_RESPONSE_BYTES_PER_SECOND/);
  });
});

/**
 * A source the failure throttle counted out is refused before its request is logged, routed or
 * its body parsed (docs/security.md "Refusals cost almost nothing"): wrong client secrets in the
 * FHIR client headers and as HTTP Basic at the token endpoint. Before, each went through the
 * whole pipeline (body parser, routing, the guard) to meet the throttle there.
 */
describe('security: refusals of a throttled source cost almost nothing (e2e)', () => {
  let t: TestApp;
  let owner: TestClient;
  beforeAll(async () => {
    t = await createTestApp({ ...IDENTITY_TEST_ENV, TOKEN_FAILURE_LIMIT: '3' });
    owner = await createClient(t);
  });
  afterAll(async () => t?.close());

  /** Calls of TenantResolver.resolve while `action` runs. */
  const resolvesDuring = <T>(action: () => Promise<T>) =>
    callsDuring(t.app.get(TenantResolver), 'resolve', action);

  const wrongHeaders = (i: number) => ({
    client_id: owner.client_id,
    client_secret: `wrong-${i}`,
    'x-app-user-id': 'someone',
  });

  it('wrong secrets in the FHIR client headers: once counted out, 429 before the body is parsed or the guard runs; the owner is still served', async () => {
    // the owner's secret, verified now, passes later from the same address
    await request(t.server).post('/user-management/v1/user').send({
      app_user_id: 'someone',
      client_id: owner.client_id,
      client_secret: owner.client_secret,
    });
    const counted: number[] = [];
    for (let i = 0; i < 3; i++)
      counted.push((await request(t.server).get('/r4/Patient').set(wrongHeaders(i))).status);
    expect(counted).toEqual([401, 401, 401]);
    const flood = await resolvesDuring(() =>
      Promise.all([
        ...Array.from({ length: 10 }, (_, i) =>
          request(t.server)
            .get('/r4/Patient')
            .set(wrongHeaders(10 + i)),
        ),
        // a body that does not parse: refused before the parser sees it
        request(t.server)
          .post('/r4/Patient')
          .set(wrongHeaders(99))
          .set('Content-Type', json)
          .send('{"resourceType": "Patient", '),
      ]),
    );
    expect(flood.calls).toBe(0);
    expect(flood.result.map((r) => r.status)).toEqual(Array(11).fill(429));
    const last = flood.result[10];
    expect(last.headers['content-type']).toBe('application/fhir+json; charset=utf-8');
    expect(Number(last.headers['retry-after'])).toBeGreaterThan(0);
    expect(last.body.issue[0]).toMatchObject({ code: 'throttled' });
    // the owner's own secret, verified as right lately, is not refused from the same address
    await request(t.server)
      .get('/r4/Patient')
      .set({ client_id: owner.client_id, client_secret: owner.client_secret, 'x-app-user-id': 'someone' })
      .expect(200);
  });

  it('wrong secrets as HTTP Basic at the token endpoint: once counted out, 429 before the body is parsed', async () => {
    const other = await createClient(t);
    const basic = (secret: string) =>
      `Basic ${Buffer.from(`${encodeURIComponent(other.client_id)}:${encodeURIComponent(secret)}`).toString('base64')}`;
    const token = (secret: string) =>
      request(t.server)
        .post('/auth/realms/epa-uat/protocol/openid-connect/token')
        .set('Authorization', basic(secret))
        .type('form')
        .send({ grant_type: 'client_credentials' });
    for (let i = 0; i < 3; i++) await token(`wrong-${i}`).expect(401);
    // a body that does not parse: refused before the parser sees it (400 otherwise)
    const refused = await request(t.server)
      .post('/auth/realms/epa-uat/protocol/openid-connect/token')
      .set('Authorization', basic('wrong-again'))
      .set('Content-Type', 'application/json')
      .send('{"grant_type": ');
    expect(refused.status).toBe(429);
    expect(refused.body).toMatchObject({ error: 'too_many_requests' });
    expect(refused.headers['retry-after']).toBeDefined();
  });
});
