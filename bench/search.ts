/**
 * FHIR search latency: the Synthea R4 sample loaded BENCH_COPIES times (default 5,
 * ≈195,000 resources plus their Provenances) into one client through the API, then 10 typical
 * searches at 8 and at 32 connections: through the HTTP API (autocannon) and through the raw driver
 * doing the same work (the very commands the app sent for that search, recorded with driver command
 * monitoring and replayed in order, same concurrency and request count). Target: API p99 < 50 ms.
 * Prints a table and writes bench/results/search.json. Run: npm run bench -- search
 *   BENCH_COPIES=<n>, BENCH_PATIENTS=<n> (patients per copy, default 100),
 *   SEARCH_BENCH_REQUESTS=<n> per search and concurrency (default 400),
 *   BENCH_DB=<name> keeps the loaded database; a later run with the same name measures its data
 *   again without loading (bench-server.ts `reuseBenchUsers`),
 *   SEARCH_BENCH_PROFILE=1 one request at a time instead: API median and, per command the app
 *   sent, the engine's own time (`explain` executionStats); the commands themselves go to
 *   bench/results/search-commands.json (extended JSON, for `EXPLAIN ANALYZE` in PostgreSQL:
 *   docs/storage.md "Where the time goes"),
 *   SEARCH_BENCH_ONLY=<substring> only the searches whose name holds it (and the extra ones,
 *   outside the ten typical searches, only when it names them: `type level`),
 *   SEARCH_BENCH_CONNECTIONS=8,32 the concurrencies (default both),
 *   SEARCH_BENCH_BASELINE=<a built checkout> that build served on the same data as a row of its own
 *   beside each of the app's rows (an A/B pair: same data, same load), SEARCH_BENCH_ROUNDS=n the
 *   pairs n times, order swapped each round. Every row says the server's and the engine's CPU
 *   milliseconds per request (robust on a loaded machine, where latency is not); with MONGO_URL
 *   (an engine this process did not start: BENCH_DB is kept only there) SEARCH_BENCH_ENGINE_PID=<pid>
 *   names the process whose descendants are that engine.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import autocannon from 'autocannon';
import { BSON } from 'mongodb';
import type { mongo } from 'mongoose';
import { recordQueries, type RecordedQuery } from '../test/support/query-plans';
import { loadSyntheaResources } from '../test/support/synthea-data';
import {
  createBenchUsers,
  httpJson,
  inParallel,
  printTable,
  reuseBenchUsers,
  serveInOwnProcess,
  startBenchServer,
  type BenchServer,
  type BenchUser,
} from './lib/bench-server';
import { childrenCpuMs } from './lib/process-cpu';
import { cpuSeconds } from './lib/process-stats';
import { loadSyntheaR4, type SyntheaLoadResult } from './lib/synthea-load';

const COPIES = Number(process.env.BENCH_COPIES ?? 5);
const PATIENTS = process.env.BENCH_PATIENTS ? Number(process.env.BENCH_PATIENTS) : undefined;
const REQUESTS = Number(process.env.SEARCH_BENCH_REQUESTS ?? 400);
/** Users the sample's patients are spread over (round-robin), as bench/ingest.ts does. */
export const USERS = 4;
const CONCURRENCY = (process.env.SEARCH_BENCH_CONNECTIONS ?? '8,32').split(',').map(Number);
const ONLY = process.env.SEARCH_BENCH_ONLY;
/** Another built checkout (a directory with `dist/src/main.js`): its rows beside the app's, same data. */
const BASELINE = process.env.SEARCH_BENCH_BASELINE;
const ROUNDS = Math.max(1, Number(process.env.SEARCH_BENCH_ROUNDS ?? 1));
/** With MONGO_URL: the process that started that engine, whose descendants' CPU is the engine's. */
const ENGINE_PID = process.env.SEARCH_BENCH_ENGINE_PID
  ? Number(process.env.SEARCH_BENCH_ENGINE_PID)
  : undefined;
const TARGET_P99_MS = 50;

function searches(
  patientId: string,
  family: string,
  loadStarted: string,
  loadMiddle: string,
): Array<[string, string]> {
  const p = patientId;
  return [
    ['Observation by patient+code', `/r4/Observation?subject=Patient/${p}&code=http://loinc.org|8302-2`],
    ['Observation by patient+date range', `/r4/Observation?subject=Patient/${p}&date=ge2015&date=lt2020`],
    ['Condition by patient', `/r4/Condition?patient=Patient/${p}`],
    ['Patient by name', `/r4/Patient?name=${encodeURIComponent(family)}`],
    ['Encounter _include=Encounter:patient', `/r4/Encounter?patient=${p}&_include=Encounter:patient`],
    ['Patient _revinclude=Provenance:target', `/r4/Patient?_id=${p}&_revinclude=Provenance:target`],
    ['Observation by code+date (no patient)', `/r4/Observation?code=http://loinc.org|8302-2&date=ge2019-06`],
    [
      'Observation _lastUpdated range',
      `/r4/Observation?_lastUpdated=ge${loadStarted}&_lastUpdated=lt${loadMiddle}`,
    ],
    ['Patient/$everything first page', `/r4/Patient/${p}/$everything`],
    ['Observation _sort=-date', `/r4/Observation?subject=Patient/${p}&_sort=-date`],
  ];
}

/**
 * Searches outside the ten typical ones (the README's table and its p99 target): run only when
 * SEARCH_BENCH_ONLY names them.
 */
function extraSearches(): Array<[string, string]> {
  return [
    ['Patient/$everything type level, first page', '/r4/Patient/$everything'],
    ['Patient/$everything type level, page 3', '/r4/Patient/$everything?_skip=100'],
  ];
}

/**
 * SEARCH_BENCH_PROFILE=1: instead of the loaded runs, one search at a time (a quieter figure on a
 * shared machine): the median of sequential API requests, and the engine's own time for each
 * command the app sent (`explain` with executionStats: milliseconds and documents examined).
 */
const PROFILE = process.env.SEARCH_BENCH_PROFILE === '1';
/**
 * One client sends the load and every search: its per-second shares of database, worker and
 * event-loop time (429 past them, bench/fairness.ts measures them) are lifted, as bench-server.ts
 * lifts its other per-client limits; otherwise bundles of the load and searches at 8 connections
 * are refused as throttled.
 */
const UNMETERED = {
  CLIENT_DATABASE_MS_PER_SECOND: '0',
  CLIENT_WORKER_MS_PER_SECOND: '0',
  CLIENT_LOOP_MS_PER_SECOND: '0',
};
const PROFILE_REQUESTS = 25;

async function profileSearch(
  server: BenchServer,
  name: string,
  path: string,
  auth: Record<string, string>,
  recorded: readonly RecordedQuery[],
  total: number | string,
): Promise<Record<string, string | number>> {
  const latencies: number[] = [];
  for (let i = 0; i < PROFILE_REQUESTS; i++) {
    const begin = process.hrtime.bigint();
    await httpJson(server.baseUrl, 'GET', path, undefined, auth);
    latencies.push(Number(process.hrtime.bigint() - begin) / 1e6);
  }
  latencies.sort((a, b) => a - b);
  const engine: string[] = [];
  let engineMs = 0;
  for (const query of recorded) {
    const explain = (await server.connection.db!.command({
      explain: query.command,
      verbosity: 'executionStats',
    })) as ExplainStats & { stages?: Array<Record<string, ExplainStats>> };
    const stats = explain.executionStats ?? pipelineStats(explain.stages ?? []);
    engineMs += stats.executionTimeMillis ?? 0;
    const shape = planShape(explain);
    engine.push(
      `${Object.keys(query.command)[0]} ${shape.index ?? 'no index'}${shape.sorts ? ' SORT' : ''} ` +
        `${Math.round((stats.executionTimeMillis ?? 0) * 10) / 10}ms/${shape.keys}keys/${stats.totalDocsExamined ?? '?'}ex/${stats.nReturned ?? '?'}ret`,
    );
  }
  return {
    search: name,
    total,
    queries: recorded.length,
    'API median ms': Math.round(latencies[Math.floor(latencies.length / 2)] * 10) / 10,
    'engine ms': Math.round(engineMs * 10) / 10,
    commands: engine.join(', '),
  };
}

/** The index read, whether a SORT stage sorts in memory, and the index keys read (as keysRead). */
function planShape(explain: unknown): { index?: string; sorts: boolean; keys: number } {
  const shape: { index?: string; sorts: boolean; keys: number } = { sorts: false, keys: 0 };
  const visit = (node: unknown, key?: string): void => {
    if (Array.isArray(node)) return node.forEach((item) => visit(item));
    if (typeof node !== 'object' || node === null || key === 'rejectedPlans') return;
    const record = node as Record<string, unknown>;
    if (record.stage === 'SORT') shape.sorts = true;
    if (typeof record.indexName === 'string') shape.index ??= record.indexName;
    if (typeof record.totalKeysExamined === 'number')
      shape.keys = Math.max(shape.keys, record.totalKeysExamined);
    for (const [name, value] of Object.entries(record)) visit(value, name);
  };
  visit(explain);
  return shape;
}

interface ExecutionStats {
  executionTimeMillis?: number;
  totalDocsExamined?: number;
  nReturned?: number;
}
type ExplainStats = { executionStats?: ExecutionStats };

/**
 * An aggregation's explain has stats per stage (`stages[i].$cursor`, `$sort` …, DocumentDB and
 * MongoDB alike): the last stage's time (each includes the ones before it), the first's examined
 * documents, the last's returned ones.
 */
function pipelineStats(stages: ReadonlyArray<Record<string, ExplainStats>>): ExecutionStats {
  const stats = stages.map((stage) => Object.values(stage)[0]?.executionStats ?? {});
  return {
    executionTimeMillis: Math.max(0, ...stats.map((s) => s.executionTimeMillis ?? 0)),
    totalDocsExamined: stats[0]?.totalDocsExamined,
    nReturned: stats[stats.length - 1]?.nReturned,
  };
}

interface Latency {
  perSecond: number;
  p50: number;
  p99: number;
}

/** `total` runs of `one` with `concurrency` in flight: req/s and latency percentiles in ms. */
async function measure(total: number, concurrency: number, one: () => Promise<void>): Promise<Latency> {
  const latencies: number[] = [];
  const start = process.hrtime.bigint();
  await inParallel(total, concurrency, async () => {
    const begin = process.hrtime.bigint();
    await one();
    latencies.push(Number(process.hrtime.bigint() - begin) / 1e6);
  });
  const seconds = Number(process.hrtime.bigint() - start) / 1e9;
  latencies.sort((a, b) => a - b);
  const at = (q: number) => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))];
  return { perSecond: total / seconds, p50: at(0.5), p99: at(0.99) };
}

/**
 * The commands the app sent for one search, replayed through the raw driver: `REQUESTS` times with
 * `connections` in flight. A failed replay (the engine's pool timing out under load) is reported.
 */
async function replay(
  db: mongo.Db,
  name: string,
  connections: number,
  recorded: readonly RecordedQuery[],
): Promise<Latency> {
  try {
    return await measure(REQUESTS, connections, async () => {
      for (const query of recorded) {
        // A raw find/aggregate leaves its cursor open past the first batch: closed here, as the
        // app's driver does (an open cursor pins one of the engine's connections). promoteLongs
        // off: the cursor id goes back as the int64 the engine sent.
        const answer = await db.command(query.command, { promoteLongs: false });
        const cursorId = (answer as { cursor?: { id?: unknown } }).cursor?.id;
        if (cursorId && String(cursorId) !== '0')
          await db.command({ killCursors: query.collection, cursors: [cursorId] });
      }
    });
  } catch (error) {
    process.stderr.write(`${name} @${connections}: driver replay failed: ${String(error)}\n`);
    return { perSecond: Number.NaN, p50: Number.NaN, p99: Number.NaN };
  }
}

/**
 * The search benchmark on loaded data (also run by bench/ingest.ts after its load): the app must run
 * with METRICS_ENABLED=true (command monitoring records its queries for the driver replay).
 */
export async function benchSearches(
  server: BenchServer,
  users: readonly BenchUser[],
  load: SyntheaLoadResult,
  loadStarted: string,
  loadMiddle: string,
): Promise<void> {
  {
    const stored = await server.connection.db!.collection('resources').countDocuments();
    // The patient with the most resources (first copy): the heaviest per-patient searches. Patients
    // go round-robin to the users, so patient n belongs to user n % USERS.
    const sample = loadSyntheaResources('r4', PATIENTS ?? Infinity);
    let patientIndex = -1;
    const perPatient: Array<{ id: string; family: string; count: number; index: number }> = [];
    for (const resource of sample) {
      if (resource.resourceType === 'Patient') {
        patientIndex++;
        const name = (resource as { name?: Array<{ family?: string }> }).name?.[0]?.family ?? 'x';
        perPatient.push({ id: String(resource.id), family: name, count: 0, index: patientIndex });
      }
      if (perPatient.length > 0) perPatient[perPatient.length - 1].count++;
    }
    const heaviest = perPatient.sort((a, b) => b.count - a.count)[0];
    const user = users[heaviest.index % USERS];
    const auth = { Authorization: `Bearer ${user.accessToken}` };
    const db = server.connection.db!;

    const rows: Array<Record<string, string | number>> = [];
    const commands: Array<{ search: string; commands: unknown[] }> = [];
    // The load runs against the real server in its own process (as operators run it; in this
    // process it would share the event loop with the load generator); this process's app answers
    // each search once first, so that its commands are recorded for the driver replay.
    const env = { DB_TIMEOUT_MS: String(server.settings.dbTimeoutMs), ...UNMETERED };
    const servers = [{ label: 'app', process: await serveInOwnProcess(server, env) }];
    // the engine's CPU: the processes below the one that started it (this one, or MONGO_URL's holder)
    const engineCpuMs = () =>
      ENGINE_PID !== undefined
        ? childrenCpuMs(ENGINE_PID)
        : childrenCpuMs() - servers.reduce((sum, s) => sum + cpuSeconds([s.process.child!.pid!]) * 1000, 0);
    try {
      if (BASELINE)
        servers.push({ label: 'baseline', process: await serveInOwnProcess(server, env, BASELINE) });
      const all = [
        ...searches(heaviest.id, heaviest.family, loadStarted, loadMiddle),
        ...(ONLY === undefined ? [] : extraSearches()),
      ];
      for (const [name, path] of all.filter(([search]) => ONLY === undefined || search.includes(ONLY))) {
        let total: number | string = '';
        const recorded: RecordedQuery[] = await recordQueries(server.connection, async () => {
          const probe = await httpJson(server.baseUrl, 'GET', path, undefined, auth);
          if (probe.status !== 200)
            throw new Error(`${path}: ${probe.status} ${JSON.stringify(probe.body).slice(0, 300)}`);
          total = probe.body.total ?? '';
        });
        if (PROFILE) {
          rows.push(await profileSearch(server, name, path, auth, recorded, total));
          commands.push({ search: name, commands: recorded.map((query) => query.command) });
          continue;
        }
        const load = (url: string, connections: number, amount: number) =>
          autocannon({
            url,
            connections,
            amount,
            timeout: 60,
            headers: { authorization: auth.Authorization },
          });
        // warm-up, not counted: each server process compiles this search's path and fills its caches
        for (const { process: own } of servers)
          await load(`${own.url}${path}`, CONCURRENCY[0], Math.min(100, REQUESTS));
        for (let round = 0; round < ROUNDS; round++) {
          const order = round % 2 === 0 ? servers : [...servers].reverse();
          for (const connections of CONCURRENCY) {
            for (const { label, process: own } of order) {
              const serverCpu = () => cpuSeconds([own.child!.pid!]) * 1000;
              const before = { server: serverCpu(), engine: engineCpuMs() };
              const api = await load(`${own.url}${path}`, connections, REQUESTS);
              const served = Math.max(1, api.requests.total);
              const serverMs = (serverCpu() - before.server) / served;
              const engineMs = (engineCpuMs() - before.engine) / served;
              // the driver replay once per concurrency, beside the app's first round
              let driver: Latency = { perSecond: Number.NaN, p50: Number.NaN, p99: Number.NaN };
              if (label === 'app' && round === 0) driver = await replay(db, name, connections, recorded);
              rows.push({
                search: name,
                server: label,
                conns: connections,
                total,
                queries: recorded.length,
                errors: api.errors + api.timeouts + (api.non2xx ?? 0),
                'API p50': api.latency.p50,
                'API p99': api.latency.p99,
                'API req/s': Math.round(api.requests.total / api.duration),
                'server ms/req': Math.round(serverMs * 100) / 100,
                'engine ms/req': Math.round(engineMs * 100) / 100,
                'drv p50': Math.round(driver.p50 * 10) / 10,
                'drv p99': Math.round(driver.p99 * 10) / 10,
                'drv req/s': Math.round(driver.perSecond),
              });
              process.stderr.write(
                `${name} ${label} @${connections}: API p99 ${api.latency.p99} ms, server ${serverMs.toFixed(2)} + engine ${engineMs.toFixed(2)} ms/req, load ${loadavg()[0].toFixed(1)}\n`,
              );
            }
          }
        }
      }
    } finally {
      for (const { process: own } of servers) await own.stop();
    }
    console.log(
      `\nsearch — ${server.engine}: ${COPIES} × Synthea R4 = ${load.resources} resources (${stored} current documents with Provenances), ` +
        `loaded at ${load.resourcesPerSecond.toFixed(0)} resources/s; ${REQUESTS} requests per row; load average ${loadavg()
          .map((l) => l.toFixed(1))
          .join(' ')}\n`,
    );
    printTable(rows);
    mkdirSync(join(__dirname, 'results'), { recursive: true });
    if (PROFILE) {
      const file = join(__dirname, 'results', 'search-commands.json');
      writeFileSync(file, `${BSON.EJSON.stringify(commands, undefined, 2, { relaxed: true })}\n`);
      return;
    }
    const summary = rows.map((r) => ({
      figure: `${r.search} @${r.conns} p99`,
      value: r['API p99'],
      unit: 'ms',
      target: `< ${TARGET_P99_MS}`,
    }));
    writeFileSync(
      join(__dirname, 'results', 'search.json'),
      `${JSON.stringify({ engine: server.engine, copies: COPIES, resources: load.resources, documents: stored, rows, summary }, null, 2)}\n`,
    );
  }
}

async function main(): Promise<void> {
  // METRICS_ENABLED: driver command monitoring, which records the app's queries for the replay.
  const server = await startBenchServer({
    DB_TIMEOUT_MS: '60000',
    ...UNMETERED,
    DIRECTORY_SEED: 'false',
    METRICS_ENABLED: 'true',
  });
  try {
    // A kept database (BENCH_DB) that was loaded before: measure again on its data.
    const resources = server.connection.db!.collection('resources');
    const reused = await reuseBenchUsers(server, USERS);
    if (reused.length > 0) {
      const stored = await resources.countDocuments({ t: { $ne: 'Provenance' } });
      const [first] = await resources.find({}).sort({ lu: 1 }).limit(1).toArray();
      const [middle] = await resources
        .find({})
        .sort({ lu: 1 })
        .skip(Math.floor((await resources.countDocuments()) / 2))
        .limit(1)
        .toArray();
      process.stderr.write(`engine ${server.engine}; reusing ${stored} resources of ${server.dbName}\n`);
      const load = { resources: stored, resourcesPerSecond: Number.NaN } as SyntheaLoadResult;
      await benchSearches(server, reused, load, first.lu.toISOString(), middle.lu.toISOString());
      return;
    }
    const users = await createBenchUsers(server, 1, USERS);
    process.stderr.write(`engine ${server.engine}; loading ${COPIES} copies of the sample\n`);
    const loadStarted = new Date().toISOString();
    let loadMiddle = loadStarted;
    const load = await loadSyntheaR4(server, {
      users,
      parallel: 6,
      maxPatients: PATIENTS,
      copies: COPIES,
      onProgress: (done, total) => {
        if (done <= total / 2) loadMiddle = new Date().toISOString();
        if (done % 2000 === 0) process.stderr.write(`  ${done}/${total} bundles\n`);
      },
    });
    await benchSearches(server, users, load, loadStarted, loadMiddle);
  } finally {
    await server.close();
  }
}

if (require.main === module) {
  main().catch((error) => {
    console.error(error);
    process.exit(1);
  });
}
