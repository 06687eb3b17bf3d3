import { chmodSync, mkdtempSync, rmSync } from 'fs';
import { tmpdir } from 'os';
import { join } from 'path';
import request from 'supertest';
import { bearer, createClient, createTestApp, createUser, IDENTITY_TEST_ENV, TestApp } from '@app/testing';
import { documentDbPaths, RunningDocumentDb, startDocumentDb } from '../src/database/documentdb-process';
import { freePort } from '../src/database/free-port';
import { parseEngineSettings } from '../src/config/settings';

const DB_TIMEOUT_MS = 1500;
/** Requests of each kind sent at once during the hang: more than the idle pool holds, so most wait for new connections. */
const COPIES = 6;

/**
 * A hung database: the gateway process is stopped with SIGSTOP, not
 * killed, so every socket stays open and nothing answers. Reads, writes and token requests must
 * answer 503 within DB_TIMEOUT_MS (plus the time to write the answer), and service must resume by
 * itself after SIGCONT. Several of each at once: most wait for a connection being opened, whose
 * time-out clears the pool and makes the driver retry (see serverSelectionTimeoutMs). Runs on its own DocumentDB so that stopping it leaves the shared one alone.
 */
describe('hung database (e2e)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'fhir-hang-'));
  const paths = documentDbPaths(parseEngineSettings(process.env));
  let db: RunningDocumentDb;
  let t: TestApp;
  let paused = false;
  const pause = (on: boolean) => {
    process.kill(db.gatewayPid!, on ? 'SIGSTOP' : 'SIGCONT');
    paused = on;
  };

  beforeAll(async () => {
    chmodSync(dir, 0o755);
    db = await startDocumentDb(paths, dir, await freePort());
    const saved = process.env.TEST_MONGO_URL;
    process.env.TEST_MONGO_URL = db.uri;
    try {
      t = await createTestApp({
        ...IDENTITY_TEST_ENV,
        DIRECTORY_SEED: 'false',
        DB_TIMEOUT_MS: String(DB_TIMEOUT_MS),
        // 3 × COPIES FHIR requests of one client at once (the per-client limit is not under test)
        CLIENT_MAX_CONCURRENT_REQUESTS: '100',
        // fewer slots than requests: most FHIR requests wait in request admission, and a waiting
        // request must answer 503 in time too (src/admission/admission-lane.ts)
        SERVER_MAX_CONCURRENT_READS: '4',
        SERVER_MAX_CONCURRENT_WRITES: '2',
      });
    } finally {
      process.env.TEST_MONGO_URL = saved;
    }
  }, 120_000);

  afterAll(async () => {
    if (paused) pause(false);
    await t?.app.close();
    await db?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it(`reads, writes, token and user requests (${COPIES} of each at once) answer 503 within DB_TIMEOUT_MS; all recover after SIGCONT`, async () => {
    expect(db.gatewayPid).toBeGreaterThan(0);
    const client = await createClient(t);
    const user = await createUser(t, client);
    const auth = bearer(user.access_token);
    const created = await request(t.server)
      .post('/r4/Patient')
      .set(auth)
      .set('Content-Type', 'application/fhir+json')
      .send(JSON.stringify({ resourceType: 'Patient', gender: 'female' }))
      .expect(201);
    const form = { client_id: client.client_id, client_secret: client.client_secret };
    let refreshToken = user.refresh_token;
    const calls: Record<string, () => request.Test> = {
      read: () => request(t.server).get(`/r4/Patient/${created.body.id}`).set(auth),
      search: () => request(t.server).get('/r4/Patient?gender=female').set(auth),
      write: () =>
        request(t.server)
          .post('/r4/Patient')
          .set(auth)
          .set('Content-Type', 'application/fhir+json')
          .send(JSON.stringify({ resourceType: 'Patient', gender: 'male' })),
      token: () =>
        request(t.server)
          .post('/oauth2/token')
          .type('form')
          .send({ grant_type: 'refresh_token', refresh_token: refreshToken, ...form }),
      users: () =>
        request(t.server)
          .post('/user-management/v1/user')
          .send({ ...form, app_user_id: 'during-hang' }),
    };
    // warm: every call works before the pause (and the token rotation goes on from here)
    for (const [name, call] of Object.entries(calls)) {
      const res = await call();
      expect({ name, status: res.status }).toEqual({ name, status: name === 'write' ? 201 : 200 });
      if (name === 'token') refreshToken = res.body.refresh_token;
    }

    pause(true);
    const timings: Record<string, number> = {};
    const concurrent = Object.entries(calls).flatMap(([name, call]) =>
      Array.from({ length: COPIES }, (_, i) => [`${name}#${i}`, call] as const),
    );
    await Promise.all(
      concurrent.map(async ([name, call]) => {
        const started = Date.now();
        const res = await call();
        timings[name] = Date.now() - started;
        expect({ name, status: res.status, retryAfter: res.headers['retry-after'] }).toEqual({
          name,
          status: 503,
          retryAfter: expect.any(String),
        });
      }),
    );
    process.stdout.write(
      `hung database: 503 after ${JSON.stringify(timings)} ms (DB_TIMEOUT_MS ${DB_TIMEOUT_MS})\n`,
    );
    // The deadline is per database operation; the answer follows it at once. On a busy test
    // machine allow a little for scheduling, never a second deadline (the driver's retry used to
    // add one: see serverSelectionTimeoutMs in src/database/database-liveness.ts).
    for (const [name, ms] of Object.entries(timings)) {
      expect({ name, ms: ms < DB_TIMEOUT_MS + 1000 }).toEqual({ name, ms: true });
    }

    pause(false);
    const resumed = Date.now();
    for (const [name, call] of Object.entries(calls)) {
      let status = 0;
      for (let i = 0; i < 40 && status !== 200 && status !== 201; i++) {
        const res = await call();
        status = res.status;
        if (name === 'token' && status === 200) refreshToken = res.body.refresh_token;
        if (status !== 200 && status !== 201) await new Promise((r) => setTimeout(r, 250));
      }
      expect({ name, status }).toEqual({ name, status: name === 'write' ? 201 : 200 });
    }
    process.stdout.write(`hung database: every call served again ${Date.now() - resumed} ms after SIGCONT\n`);
    await request(t.server).get('/health').expect(200);
  }, 120_000);
});
