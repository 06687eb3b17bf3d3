import { chmodSync, mkdtempSync, rmSync } from 'fs';
import { tmpdir } from 'os';
import { join } from 'path';
import request from 'supertest';
import { createTestApp, TestApp } from '@app/testing';
import { documentDbPaths, RunningDocumentDb, startDocumentDb } from '../src/database/documentdb-process';
import { freePort } from '../src/database/free-port';
import { parseEngineSettings } from '../src/config/settings';

/**
 * The database goes away under a running app and comes back: /health says 503 meanwhile,
 * requests fail fast, and service resumes without restarting the app.
 * Runs on its own DocumentDB instance so that stopping it leaves the shared one alone.
 */
describe('database outage (e2e)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'fhir-outage-'));
  const paths = documentDbPaths(parseEngineSettings(process.env));
  let port: number;
  let db: RunningDocumentDb;
  let t: TestApp;

  beforeAll(async () => {
    chmodSync(dir, 0o755);
    port = await freePort();
    db = await startDocumentDb(paths, dir, port);
    process.env.TEST_MONGO_URL_SAVED = process.env.TEST_MONGO_URL;
    process.env.TEST_MONGO_URL = db.uri;
    t = await createTestApp({ DB_TIMEOUT_MS: '700' });
    process.env.TEST_MONGO_URL = process.env.TEST_MONGO_URL_SAVED;
  }, 120_000);

  afterAll(async () => {
    await t?.app.close();
    await db?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('reports 503 while the database is down and recovers by itself', async () => {
    await request(t.server).get('/health').expect(200);
    await db.stop();
    const started = Date.now();
    const down = await request(t.server).get('/health');
    expect({ status: down.status, body: down.body }).toEqual({ status: 503, body: expect.anything() });
    expect(Date.now() - started).toBeLessThan(5000);

    db = await startDocumentDb(paths, dir, port);
    let status = 0;
    for (let i = 0; i < 50 && status !== 200; i++) {
      status = (await request(t.server).get('/health')).status;
      if (status !== 200) await new Promise((r) => setTimeout(r, 200));
    }
    expect(status).toBe(200);
  }, 120_000);
});
