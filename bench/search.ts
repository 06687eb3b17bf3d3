/**
 * FHIR search latency (issue 5): Synthea R4 loaded under 3 users (each its own client, so the same
 * ids coexist), then 10 typical searches with 8 connections each: p50/p99 and req/s. Target p99 <
 * 50 ms on MongoDB; on FerretDB 1.x (SQLite) only `_id` equality is pushed down to SQL, so every
 * search below but `$everything`'s patient look-up is a scan of the tenant's documents there.
 * Starts its own app and database (MONGO_URL, else as the tests do); prints a table and writes
 * bench/results/search.json. Run: npm run bench -- search
 *   SEARCH_BENCH_PATIENTS=<n> (default 100: ≈117k resources with Provenances), SEARCH_BENCH_REQUESTS=<n> per
 *   search (default 400), SEARCH_BENCH_CONNECTIONS=<n> (default 8).
 */
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import autocannon from 'autocannon';
import { getConnectionToken } from '@nestjs/mongoose';
import type { Connection } from 'mongoose';
import { syntheaRecords, type SyntheaRecord } from '../libs/testing/src/synthea';
import { call, loadInBundles } from './lib/fhir-load';
import { parseSettings } from '../src/config/settings';
import { createApp } from '../src/create-app';
import { resolveDatabase } from '../src/database/embedded-database';
import { ClientsService } from '../src/modules/auth/clients/clients.service';

const USERS = 3;
const CONNECTIONS = Number(process.env.SEARCH_BENCH_CONNECTIONS ?? 8);
const TARGET_P99_MS = 50;

function searches(record: SyntheaRecord, loadStarted: string, loadMiddle: string): Array<[string, string]> {
  const p = record.patientId;
  const family = encodeURIComponent(String((record.resources[0] as any).name[0].family));
  return [
    ['Observation by patient+code', `/r4/Observation?subject=Patient/${p}&code=http://loinc.org|8302-2`],
    ['Observation by patient+date range', `/r4/Observation?subject=Patient/${p}&date=ge2015&date=lt2020`],
    ['Condition by patient', `/r4/Condition?patient=Patient/${p}`],
    ['Patient by name', `/r4/Patient?name=${family}`],
    ['Encounter _include=Encounter:patient', `/r4/Encounter?patient=${p}&_include=Encounter:patient`],
    ['Patient _revinclude=Provenance:target', `/r4/Patient?_id=${p}&_revinclude=Provenance:target`],
    ['Observation _content', `/r4/Observation?_content=glucose`],
    [
      'Observation _lastUpdated range',
      `/r4/Observation?_lastUpdated=ge${loadStarted}&_lastUpdated=lt${loadMiddle}`,
    ],
    ['Patient/$everything first page', `/r4/Patient/${p}/$everything`],
    ['Observation _sort=-date', `/r4/Observation?subject=Patient/${p}&_sort=-date`],
  ];
}

function printTable(rows: Array<Record<string, string | number>>): void {
  const cols = Object.keys(rows[0]);
  const width = cols.map((c) => Math.max(c.length, ...rows.map((r) => String(r[c]).length)));
  console.log(cols.map((c, i) => c.padEnd(width[i])).join(' | '));
  console.log(width.map((w) => '-'.repeat(w)).join('-|-'));
  for (const r of rows) console.log(cols.map((c, i) => String(r[c]).padEnd(width[i])).join(' | '));
}

async function main(): Promise<void> {
  const patients = Number(process.env.SEARCH_BENCH_PATIENTS ?? 100);
  const requests = Number(process.env.SEARCH_BENCH_REQUESTS ?? 400);
  const dir = mkdtempSync(join(tmpdir(), 'bench-search-'));
  const database = await resolveDatabase(process.env.MONGO_URL, dir);
  const settings = parseSettings({
    LOG_LEVEL: 'warn',
    PORT: '0',
    BODY_LIMIT: '50mb',
    USER_MGMT_RATE_LIMIT: '1000000',
    // FerretDB answers scans slowly under 8 connections: give it time rather than fail fast.
    DB_TIMEOUT_MS: '60000',
    DIRECTORY_SEED: 'false',
  });
  const app = await createApp(settings, database, `bench_search_${randomBytes(4).toString('hex')}`);
  await app.listen(0, '127.0.0.1');
  const connection = app.get<Connection>(getConnectionToken());
  try {
    const info = await connection.db!.admin().command({ buildInfo: 1 });
    const engine = info.ferretdbVersion ? `FerretDB ${info.ferretdbVersion}` : `MongoDB ${info.version}`;
    const baseUrl = `http://127.0.0.1:${(app.getHttpServer().address() as { port: number }).port}`;
    const records = syntheaRecords('r4', patients);
    const resources = records.flatMap((r) => r.resources);
    const tokens: string[] = [];
    for (let u = 0; u < USERS; u++) {
      const client = await app.get(ClientsService).create({ name: `bench search ${u}`, programs: [] });
      const created = await call(`${baseUrl}/user-management/v1/user`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify({
          app_user_id: `bench-${u}`,
          client_id: client.client_id,
          client_secret: client.client_secret,
        }),
      });
      tokens.push(String(created.body.access_token));
    }
    const loadStarted = new Date().toISOString();
    const started = Date.now();
    let loadMiddle = loadStarted;
    for (const [u, token] of tokens.entries()) {
      await loadInBundles(baseUrl, token, resources, `user ${u + 1}/${USERS}`);
      if (u === 0) loadMiddle = new Date().toISOString();
    }
    const loadSeconds = (Date.now() - started) / 1000;
    const stored = await connection.collection('resources').countDocuments({});

    // The patient with the most resources: the heaviest per-patient searches.
    const heaviest = [...records].sort((a, b) => b.resources.length - a.resources.length)[0];
    const rows: Array<Record<string, string | number>> = [];
    for (const [name, path] of searches(heaviest, loadStarted, loadMiddle)) {
      const probe = await call(`${baseUrl}${path}`, { headers: { Authorization: `Bearer ${tokens[0]}` } });
      if (probe.status !== 200)
        throw new Error(`${path}: ${probe.status} ${JSON.stringify(probe.body).slice(0, 300)}`);
      const result = await autocannon({
        url: `${baseUrl}${path}`,
        connections: CONNECTIONS,
        amount: requests,
        timeout: 60,
        headers: { authorization: `Bearer ${tokens[0]}` },
      });
      rows.push({
        search: name,
        total: probe.body.total ?? '',
        requests: result.requests.total,
        errors: result.errors + result.timeouts + (result.non2xx ?? 0),
        'p50 ms': result.latency.p50,
        'p99 ms': result.latency.p99,
        'req/s': Math.round(result.requests.average * 10) / 10,
      });
      process.stderr.write(`${name}: p99 ${result.latency.p99} ms\n`);
    }
    console.log(
      `\n${engine}: ${patients} Synthea patients × ${USERS} users = ${stored} current resources (with Provenances), loaded in ${loadSeconds.toFixed(0)} s\n`,
    );
    printTable(rows);
    mkdirSync(join(__dirname, 'results'), { recursive: true });
    const summary = rows.flatMap((r) => [
      {
        figure: `${r.search} p99`,
        value: r['p99 ms'],
        unit: 'ms',
        target: engine.startsWith('MongoDB') ? `< ${TARGET_P99_MS}` : 'report',
      },
      { figure: `${r.search} req/s`, value: r['req/s'], unit: 'req/s' },
    ]);
    writeFileSync(
      join(__dirname, 'results', 'search.json'),
      `${JSON.stringify({ engine, patients, users: USERS, resources: stored, loadSeconds, connections: CONNECTIONS, rows, summary }, null, 2)}\n`,
    );
  } finally {
    await app.close();
    await database.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
