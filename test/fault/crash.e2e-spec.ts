import { randomBytes } from 'crypto';
import { mkdtempSync, rmSync } from 'fs';
import { tmpdir } from 'os';
import { join } from 'path';
import { buildIfNeeded, runCli, ServerProcess } from '@app/testing';

/**
 * Crash test: parallel clients load transaction bundles, the server is killed with
 * SIGKILL mid-load and restarted. Every write answered 2xx must read back with the same content,
 * `store check --repair` must leave the store clean, and history must agree with the current version.
 */
describe('crash under load (fault)', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'fhir-crash-'));
  const env = {
    MONGO_URL: process.env.TEST_MONGO_URL!,
    MONGO_DB: `crash_${randomBytes(4).toString('hex')}`,
    DATA_DIR: dataDir,
    LOG_LEVEL: 'warn',
    USER_MGMT_RATE_LIMIT: '100000',
    DIRECTORY_SEED: 'false',
  };
  const server = new ServerProcess(env);
  let token = '';

  beforeAll(async () => {
    buildIfNeeded();
    const created = runCli(['client', 'create', '--name', 'crash test'], env);
    expect(created.status).toBe(0);
    await server.start();
    const res = await fetch(`${server.url}/user-management/v1/user`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        app_user_id: 'crash-user',
        client_id: created.json.client_id,
        client_secret: created.json.client_secret,
      }),
    });
    token = ((await res.json()) as { access_token: string }).access_token;
    expect(token).toBeTruthy();
  }, 180000);

  afterAll(async () => {
    await server.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  function bundle(worker: number, round: number) {
    const entry = Array.from({ length: 20 }, (_, i) => {
      const id = `w${worker}-r${round}-${i}`;
      const resource =
        i % 2 === 0
          ? { resourceType: 'Patient', id, name: [{ family: `Fam${id}`, given: ['G'] }], gender: 'other' }
          : {
              resourceType: 'Observation',
              id,
              status: 'final',
              code: { coding: [{ system: 'http://loinc.org', code: '8867-4' }] },
              valueQuantity: { value: worker * 1000 + round + i / 100, unit: '/min' },
            };
      return {
        fullUrl: `${resource.resourceType}/${id}`,
        resource,
        request: { method: 'POST', url: resource.resourceType },
      };
    });
    return { resourceType: 'Bundle', type: 'transaction', entry };
  }

  it('keeps every acknowledged write whole across a kill -9', async () => {
    const acked = new Map<string, Record<string, unknown>>();
    let stop = false;
    const worker = async (w: number) => {
      for (let round = 0; !stop; round++) {
        const b = bundle(w, round);
        try {
          const res = await fetch(`${server.url}/r4`, {
            method: 'POST',
            headers: { authorization: `Bearer ${token}`, 'content-type': 'application/fhir+json' },
            body: JSON.stringify(b),
          });
          if (res.status !== 200) continue;
          const out = (await res.json()) as any;
          out.entry.forEach((e: any, i: number) => {
            if (/^20[01]/.test(e.response?.status ?? '')) {
              const r = b.entry[i].resource;
              acked.set(`${r.resourceType}/${r.id}`, r);
            }
          });
        } catch {
          return; // the server died under us
        }
      }
    };
    const workers = [0, 1, 2, 3].map(worker);
    // kill while bundles are in flight: after the first acknowledgements (the first requests also
    // warm up the validator and the search definitions), a little later
    const deadline = Date.now() + 60000;
    while (acked.size < 60 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    await new Promise((r) => setTimeout(r, 150));
    await server.kill9();
    stop = true;
    await Promise.all(workers);
    expect(acked.size).toBeGreaterThan(0);

    await server.start();
    const repaired = runCli(['store', 'check', '--repair'], env);
    expect(repaired.json).toBeDefined();
    const clean = runCli(['store', 'check'], env);
    expect(clean.status).toBe(0);
    expect(clean.json.missingHistory + clean.json.orphanHistory + clean.json.missingProvenance).toBe(0);

    for (const [ref, sent] of acked) {
      const res = await fetch(`${server.url}/r4/${ref}`, { headers: { authorization: `Bearer ${token}` } });
      expect({ ref, status: res.status }).toEqual({ ref, status: 200 });
      const got = (await res.json()) as any;
      const { meta, ...content } = got;
      expect(content).toEqual(sent);
      const hist = await fetch(`${server.url}/r4/${ref}/_history`, {
        headers: { authorization: `Bearer ${token}` },
      });
      const h = (await hist.json()) as any;
      expect(h.total).toBe(Number(meta.versionId));
    }
  }, 180000);
});
