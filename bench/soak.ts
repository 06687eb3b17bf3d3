/**
 * Soak: a mixed workload over many tenants for a long time (default 30 minutes), so drift in
 * speed or memory shows.
 * Reads, typical searches, creates, 20-entry transaction bundles, history,
 * `$everything` and, every `--export-every` seconds, a small bulk export, from `--connections`
 * closed-loop workers, each request for a random tenant (a user of one of several clients).
 * The workload and the data stay the same over time, so that a drift is the server's, not the
 * data's. Creates and bundles add Body Weight Observations to a patient of a writer user of their
 * client, which no read, search, history or `$everything` of the loop touches (were they added to
 * the loaded patients, every `$everything` and patient search would return more each minute); and
 * every `--purge-every` seconds each writer purges its Observations and Provenances older than
 * `--keep-writes` minutes (`DELETE /r4/purge?_type=…&_before=…`, as an app deleting data for
 * good does), so the store holds a few minutes of writes, not hours of them (a 2-hour run that
 * kept them grew the store a hundredfold, and measured the growth).
 * Every `--sample` seconds (default 60) a sample: throughput and p50/p99 per kind; the server's
 * RSS, V8 heap and event-loop delay (bench/lib/server-stats-preload.js, preloaded into the server
 * process); the embedded database's total RSS and PSS over all its processes (smaps_rollup), the
 * PSS split into private memory (the backends' own) and shared memory (mostly shared_buffers
 * pages touched: a cache of fixed size), its client backends and the age of the oldest, the
 * driver's TCP connections to it; CPU of server and database, also per request (CPU ms per
 * request is what neighbours' load on a shared machine does not distort; the load average is in
 * every sample).
 * Prints a table, writes bench/results/<out>.json and bench/results/<out>.svg (throughput and
 * memory over time; `--out soak` by default).
 *
 * Run: npm run bench -- soak --minutes 30   (options: see USAGE below)
 */
import { readFileSync, mkdirSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { httpJson, inParallel, printTable, type BenchUser } from './lib/bench-server';
import { lineChartsSvg } from './lib/line-chart';
import { startOwnServer, type OwnServer } from './lib/own-server';
import { percentile } from './lib/percentile';
import { cpuSeconds, memoryOf, postgresBackends, tcpConnectionsTo } from './lib/process-stats';
import { syntheaR4Batches } from './lib/synthea-load';
import { postPutTransaction } from './lib/fhir-load';

type Resource = Record<string, unknown>;

const USAGE = `npm run bench -- soak [--minutes 30] [--sample 60] [--clients 4] [--users 5]
  [--patients 20] [--connections 16] [--export-every 30] [--purge-every 30] [--keep-writes 2]
  [--out soak]
npm run bench -- soak --from <name>   (the analysis of bench/results/<name>.json again, rewritten)`;

interface Options {
  minutes: number;
  sample: number;
  clients: number;
  users: number;
  patients: number;
  connections: number;
  exportEvery: number;
  /** Seconds between two rounds of purges of the writers' older writes. */
  purgeEvery: number;
  /** Minutes a write stays before a purge removes it. */
  keepWrites: number;
  /** Name of the result files in bench/results (JSON and SVG). */
  out: string;
  /** Name of earlier results to analyse again instead of running. */
  from?: string;
}

function parseOptions(argv: string[]): Options {
  const o: Options = {
    minutes: 30,
    sample: 60,
    clients: 4,
    users: 5,
    patients: 20,
    connections: 16,
    exportEvery: 30,
    purgeEvery: 30,
    keepWrites: 2,
    out: 'soak',
  };
  for (let i = 0; i < argv.length; i += 2) {
    const key = argv[i]?.replace(/^--/, '').replace(/-(\w)/g, (_, c: string) => c.toUpperCase());
    const bad = () => new Error(`bad option ${argv[i]} ${argv[i + 1] ?? ''}\n${USAGE}`);
    if (!argv[i].startsWith('--') || !(key in o || key === 'from')) throw bad();
    if (key === 'out' || key === 'from') {
      if (!/^[\w.-]+$/.test(argv[i + 1] ?? '')) throw bad();
      if (key === 'from') o.from = argv[i + 1];
      o.out = argv[i + 1];
      continue;
    }
    const value = Number(argv[i + 1]);
    if (!Number.isFinite(value) || value <= 0) throw bad();
    (o as unknown as Record<string, number>)[key] = value;
  }
  return o;
}

const KINDS = ['read', 'search', 'create', 'bundle', 'history', 'everything', 'export', 'purge'] as const;
type Kind = (typeof KINDS)[number];
type LoopKind = Exclude<Kind, 'export' | 'purge'>;
/** Relative frequency of each kind in a worker's loop (export and purge run on timers of their own). */
const WEIGHTS: Array<[LoopKind, number]> = [
  ['read', 40],
  ['search', 35],
  ['create', 10],
  ['bundle', 2],
  ['history', 8],
  ['everything', 5],
];

/** A user of a client that only receives the writes of the client's tenants, and purges them. */
interface Writer {
  user: BenchUser;
  /** The patient that creates and bundles write to (read by nothing in the loop). */
  patient: string;
}

interface Tenant {
  user: BenchUser;
  patients: Array<{ id: string; family: string }>;
  writer: Writer;
  observations: string[];
  encounters: string[];
}

const pick = <T>(list: readonly T[]): T => list[Math.floor(Math.random() * list.length)];
const LOINC = 'http://loinc.org';

/** A new Body Weight (the searches of the loop look for Body Height: they do not see these). */
function newObservation(patient: string): Resource {
  return {
    resourceType: 'Observation',
    status: 'final',
    code: { coding: [{ system: LOINC, code: '29463-7', display: 'Body Weight' }] },
    subject: { reference: `Patient/${patient}` },
    effectiveDateTime: new Date().toISOString(),
    valueQuantity: {
      value: 50 + Math.round(Math.random() * 400) / 10,
      unit: 'kg',
      system: 'http://unitsofmeasure.org',
      code: 'kg',
    },
  };
}

/** One request of the kind for the tenant: method, path below the server and body. */
function request(kind: LoopKind, t: Tenant): [string, string, BenchUser, unknown?] {
  const p = pick(t.patients);
  switch (kind) {
    case 'read':
      return Math.random() < 0.8
        ? ['GET', `/r4/Observation/${pick(t.observations)}`, t.user]
        : ['GET', `/r4/Patient/${p.id}`, t.user];
    case 'search':
      return [
        'GET',
        pick([
          `/r4/Observation?patient=${p.id}&code=${encodeURIComponent(`${LOINC}|8302-2`)}`,
          `/r4/Observation?patient=${p.id}&_sort=-date`,
          `/r4/Observation?patient=${p.id}`,
          `/r4/Condition?patient=${p.id}`,
          `/r4/Encounter?patient=${p.id}&date=ge2015-01-01`,
          `/r4/Patient?name=${encodeURIComponent(p.family)}`,
          `/r4/Observation?code=${encodeURIComponent(`${LOINC}|8302-2`)}&date=ge2019-01-01`,
        ]),
        t.user,
      ];
    case 'create':
      return ['POST', '/r4/Observation', t.writer.user, newObservation(t.writer.patient)];
    case 'bundle':
      return [
        'POST',
        '/r4',
        t.writer.user,
        {
          resourceType: 'Bundle',
          type: 'transaction',
          entry: Array.from({ length: 20 }, () => ({
            resource: newObservation(t.writer.patient),
            request: { method: 'POST', url: 'Observation' },
          })),
        },
      ];
    case 'history':
      return [
        'GET',
        Math.random() < 0.5 ? `/r4/Patient/${p.id}/_history` : `/r4/Encounter/${pick(t.encounters)}/_history`,
        t.user,
      ];
    case 'everything':
      return ['GET', `/r4/Patient/${p.id}/$everything`, t.user];
  }
}

interface Outcome {
  ok: boolean;
  /** Refused by admission (429 with Retry-After): load shed, not served and not an error. */
  shed?: boolean;
  detail?: string;
}

/** Latencies of served requests, failures and shed requests of one sampling window, per kind. */
class Window {
  latencies = new Map<Kind, number[]>(KINDS.map((k) => [k, []]));
  errors = new Map<Kind, number>(KINDS.map((k) => [k, 0]));
  shed = new Map<Kind, number>(KINDS.map((k) => [k, 0]));
  /** Resources the purges removed. */
  purged = 0;
  firstError?: string;
  record(kind: Kind, ms: number, outcome: Outcome): void {
    if (outcome.shed) this.shed.set(kind, this.shed.get(kind)! + 1);
    else this.latencies.get(kind)!.push(ms);
    if (!outcome.ok && !outcome.shed) {
      this.errors.set(kind, this.errors.get(kind)! + 1);
      this.firstError ??= `${kind}: ${outcome.detail}`;
    }
  }
}

async function timed(window: () => Window, kind: Kind, run: () => Promise<Outcome>) {
  const start = process.hrtime.bigint();
  let outcome: Outcome;
  try {
    outcome = await run();
  } catch (error) {
    outcome = { ok: false, detail: (error as Error).message };
  }
  window().record(kind, Number(process.hrtime.bigint() - start) / 1e6, outcome);
}

/**
 * A small bulk export of one tenant: the manifest (answered at once: the files are streamed when
 * downloaded), then every file downloaded.
 */
async function smallExport(url: string, t: Tenant): Promise<Outcome> {
  const auth = { Authorization: `Bearer ${t.user.accessToken}` };
  const kick = await httpJson(url, 'GET', '/r4/$export?_type=Patient,Condition,Encounter', undefined, auth);
  if (kick.status !== 200)
    return { ok: false, detail: `manifest ${kick.status} ${JSON.stringify(kick.body).slice(0, 200)}` };
  for (const file of kick.body.output ?? []) {
    const link = new URL(String(file.url));
    const res = await httpJson(url, 'GET', link.pathname + link.search, undefined, auth).catch((e: Error) => {
      throw new Error(`download ${url}${link.pathname.slice(0, 40)}…: ${e.message}`);
    });
    if (res.status !== 200) return { ok: false, detail: `download ${res.status}` };
  }
  return { ok: true };
}

/** Resources removed by the purges of one round, summed over the writers. */
const PURGE_TYPES = 'Observation,Provenance';

/**
 * The writer's Observations and Provenances written more than `keepMinutes` ago removed for good:
 * the same request repeated while it answers 504 (its time budget ran out, what is removed stays
 * removed). Resolves to the resources removed.
 */
async function purgeOldWrites(url: string, writer: Writer, keepMinutes: number): Promise<number> {
  const before = new Date(Date.now() - keepMinutes * 60_000).toISOString();
  const path = `/r4/purge?_type=${PURGE_TYPES}&_before=${encodeURIComponent(before)}`;
  let removed = 0;
  for (;;) {
    const res = await httpJson(url, 'DELETE', path, undefined, {
      Authorization: `Bearer ${writer.user.accessToken}`,
    });
    const text = JSON.stringify(res.body?.issue?.[0] ?? '');
    removed += Number(/removed (\d+) resources/.exec(text)?.[1] ?? 0);
    if (res.status === 200) return removed;
    if (res.status !== 504) throw new Error(`purge ${res.status} ${text.slice(0, 200)}`);
  }
}

/** A patient of the writer's own to write to. */
async function newWriter(url: string, user: BenchUser): Promise<Writer> {
  const res = await httpJson(
    url,
    'POST',
    '/r4/Patient',
    { resourceType: 'Patient', name: [{ family: 'Soakwriter', given: ['Scratch'] }] },
    { Authorization: `Bearer ${user.accessToken}` },
  );
  if (res.status !== 201)
    throw new Error(`write patient: ${res.status} ${JSON.stringify(res.body).slice(0, 300)}`);
  return { user, patient: String(res.body.id) };
}

/**
 * The last user of each client becomes its writer; the others are the tenants, over which
 * `patients` Synthea R4 records are spread round-robin, PUT at their own ids.
 */
async function loadTenants(
  own: OwnServer,
  patients: number,
): Promise<{ tenants: Tenant[]; writers: Writer[] }> {
  const byClient = new Map<string, BenchUser[]>();
  for (const user of own.users) byClient.set(user.clientId, [...(byClient.get(user.clientId) ?? []), user]);
  const writerOf = new Map<string, Writer>();
  for (const [clientId, users] of byClient) writerOf.set(clientId, await newWriter(own.url, users.pop()!));
  const tenants: Tenant[] = [...byClient.values()].flat().map((user) => ({
    user,
    patients: [],
    writer: writerOf.get(user.clientId)!,
    observations: [],
    encounters: [],
  }));
  const { batches } = syntheaR4Batches(tenants.length, 20, patients);
  for (const b of batches)
    for (const r of b.resources) {
      const t = tenants[b.user];
      if (r.resourceType === 'Patient')
        t.patients.push({ id: String(r.id), family: String((r.name as any)?.[0]?.family) });
      if (r.resourceType === 'Observation') t.observations.push(String(r.id));
      if (r.resourceType === 'Encounter') t.encounters.push(String(r.id));
    }
  let done = 0;
  await inParallel(batches.length, 4, async (i) => {
    const b = batches[i];
    const res = await postPutTransaction(`${own.url}/r4`, b.resources, {
      Authorization: `Bearer ${tenants[b.user].user.accessToken}`,
    });
    if (res.status !== 200) throw new Error(`load: ${res.status} ${JSON.stringify(res.body).slice(0, 300)}`);
    if (++done % 50 === 0) process.stderr.write(`\rloading: ${done}/${batches.length} bundles`);
  });
  process.stderr.write('\n');
  const loaded = tenants.filter(
    (t) => t.patients.length > 0 && t.observations.length > 0 && t.encounters.length > 0,
  );
  return { tenants: loaded, writers: [...writerOf.values()] };
}

interface ServerStats {
  heapUsed: number;
  heapTotal: number;
  eventLoopDelayP50Ms: number;
  eventLoopDelayP99Ms: number;
  eventLoopDelayMaxMs: number;
}

/** Asks the preloaded hook in the server for its heap and event-loop delay (SIGWINCH, then a file). */
async function serverStats(pid: number, file: string): Promise<ServerStats | undefined> {
  const asked = Date.now();
  process.kill(pid, 'SIGWINCH');
  for (let i = 0; i < 50; i++) {
    await new Promise((r) => setTimeout(r, 20));
    try {
      const stats = JSON.parse(readFileSync(file, 'utf8'));
      if (stats.at >= asked) return stats;
    } catch {
      // not written yet
    }
  }
  return undefined;
}

/**
 * Documents in the store (current resources and history rows of all tenants) and its size on
 * disk with indexes: what the purges keep steady.
 */
async function storeSize(own: OwnServer): Promise<{ documents: number; mb: number }> {
  try {
    const db = own.bench.connection.db!;
    const counts = await Promise.all(
      ['resources', 'resource_history'].map((name) => db.collection(name).estimatedDocumentCount()),
    );
    const stats = await db.stats();
    return {
      documents: counts[0] + counts[1],
      mb: Math.round((Number(stats.storageSize) + Number(stats.indexSize)) / MB),
    };
  } catch {
    return { documents: NaN, mb: NaN };
  }
}

const MB = 1024 * 1024;
const round1 = (n: number) => Math.round(n * 10) / 10;
const round2 = (n: number) => Math.round(n * 100) / 100;

async function main(): Promise<void> {
  const o = parseOptions(process.argv.slice(2));
  if (o.from) {
    const earlier = JSON.parse(readFileSync(join(__dirname, 'results', `${o.from}.json`), 'utf8'));
    const options: Options = { ...earlier.options, out: o.out };
    report(options, earlier.engine, earlier.tenants, earlier.loadAverageAtStart, earlier.samples, earlier.at);
    return;
  }
  const statsFile = join(tmpdir(), `soak-server-stats-${process.pid}.json`);
  process.env.PROCESS_STATS_FILE = statsFile;
  process.env.SERVER_NODE_ARGS = `${process.env.SERVER_NODE_ARGS ?? ''} --require ${resolve(__dirname, 'lib', 'server-stats-preload.js')}`;
  // A fault's stack in the server's output (its last 20,000 characters are kept): errors only,
  // which a healthy run does not write.
  process.env.BENCH_LOG_LEVEL ??= 'error';
  // This process owns the embedded engine here, not the server: it keeps the indexes as a server does.
  process.env.EMBEDDED_INDEX_UPKEEP ??= 'on';
  // Tokens outlive the run (2 h by default).
  // One more user per client: its writer.
  const own = await startOwnServer(o.clients, o.users + 1, {
    ACCESS_TOKEN_TTL: String(Math.ceil(o.minutes * 60 + 3600)),
  });
  const samples: Array<Record<string, any>> = [];
  try {
    const gatewayPort = Number(new URL(own.bench.database.uri).port);
    process.stderr.write(
      `engine ${own.engine}; ${own.users.length - o.clients} tenants, ${o.clients} writers; loading ${o.patients} patients\n`,
    );
    const { tenants, writers } = await loadTenants(own, o.patients);
    const loadedAt = loadavg();
    let window = new Window();
    const end = Date.now() + o.minutes * 60_000;
    const workers = Array.from({ length: o.connections }, async () => {
      while (Date.now() < end) {
        const t = pick(tenants);
        let r = Math.random() * WEIGHTS.reduce((n, [, w]) => n + w, 0);
        const kind = WEIGHTS.find(([, w]) => (r -= w) < 0)![0];
        const [method, path, user, body] = request(kind, t);
        await timed(
          () => window,
          kind,
          async () => {
            const res = await httpJson(own.url, method, path, body, {
              Authorization: `Bearer ${user.accessToken}`,
            });
            return {
              ok: res.status < 400,
              shed: res.status === 429,
              // the OperationOutcome's words tell a time-out from an admission wait from a fault
              detail: `${res.status} ${method} ${path} ${res.status >= 400 ? (res.body?.issue?.[0]?.diagnostics ?? '') : ''}`,
            };
          },
        );
      }
    });
    const exporter = (async () => {
      while (Date.now() < end) {
        await timed(
          () => window,
          'export',
          () => smallExport(own.url, pick(tenants)),
        );
        await new Promise((r) => setTimeout(r, o.exportEvery * 1000));
      }
    })();
    const purger = (async () => {
      while (Date.now() < end) {
        await new Promise((r) => setTimeout(r, o.purgeEvery * 1000));
        for (const writer of writers)
          await timed(
            () => window,
            'purge',
            async () => {
              const removed = await purgeOldWrites(own.url, writer, o.keepWrites);
              window.purged += removed;
              return { ok: true };
            },
          );
      }
    })();
    const startedAt = Date.now();
    let cpuBefore = { server: cpuSeconds([own.serverPid]), db: cpuSeconds(own.databasePids()) };
    let last = startedAt;
    const sampler = (async () => {
      while (Date.now() < end) {
        await new Promise((r) => setTimeout(r, Math.min(o.sample * 1000, Math.max(0, end - Date.now()))));
        const w = window;
        window = new Window();
        const now = Date.now();
        const seconds = (now - last) / 1000;
        last = now;
        const dbPids = own.databasePids();
        const cpuNow = { server: cpuSeconds([own.serverPid]), db: cpuSeconds(dbPids) };
        const db = memoryOf(dbPids);
        const stats = await serverStats(own.serverPid, statsFile);
        const all = KINDS.flatMap((k) => w.latencies.get(k)!);
        const backends = postgresBackends(dbPids);
        const served = Math.max(1, all.length);
        const store = await storeSize(own);
        const sample: Record<string, any> = {
          minute: round1((now - startedAt) / 60_000),
          'req/s': Math.round(all.length / seconds),
          errors: KINDS.reduce((n, k) => n + w.errors.get(k)!, 0),
          'shed 429': KINDS.reduce((n, k) => n + w.shed.get(k)!, 0),
          'purged/s': Math.round(w.purged / seconds),
          'stored docs': store.documents,
          'store MB': store.mb,
          'p50 ms': round1(percentile(all, 50)),
          'p99 ms': round1(percentile(all, 99)),
          'server RSS MB': Math.round(memoryOf([own.serverPid]).rssMb),
          'heap MB': stats ? Math.round(stats.heapUsed / MB) : NaN,
          'db RSS MB': Math.round(db.rssMb),
          'db PSS MB': Math.round(db.pssMb),
          'db private MB': Math.round(db.anonMb),
          'db shared MB': Math.round(db.shmemMb),
          'db procs': db.processes,
          'db backends': backends.count,
          'oldest backend min': round1(backends.oldestSeconds / 60),
          'driver conns': tcpConnectionsTo(gatewayPort),
          'EL p99 ms': stats?.eventLoopDelayP99Ms ?? NaN,
          'cpu% server': Math.round(((cpuNow.server - cpuBefore.server) / seconds) * 100),
          'cpu% db': Math.round(((cpuNow.db - cpuBefore.db) / seconds) * 100),
          'server cpu ms/req': round2(((cpuNow.server - cpuBefore.server) * 1000) / served),
          'db cpu ms/req': round2(((cpuNow.db - cpuBefore.db) * 1000) / served),
          load1: round1(loadavg()[0]),
        };
        cpuBefore = cpuNow;
        const kinds: Record<string, any> = {};
        for (const k of KINDS) {
          const l = w.latencies.get(k)!;
          kinds[k] = {
            perSecond: Math.round((l.length / seconds) * 100) / 100,
            p50: round1(percentile(l, 50)),
            p99: round1(percentile(l, 99)),
            errors: w.errors.get(k),
            shed: w.shed.get(k),
          };
        }
        samples.push({ ...sample, kinds, serverStats: stats, firstError: w.firstError });
        process.stderr.write(
          `min ${sample.minute}: ${sample['req/s']} req/s p99 ${sample['p99 ms']} ms, server ${sample['server RSS MB']} MB ` +
            `(heap ${sample['heap MB']}), db PSS ${sample['db PSS MB']} MB (private ${sample['db private MB']}), ` +
            `cpu ms/req ${sample['server cpu ms/req']}+${sample['db cpu ms/req']}, load ${sample.load1}, ` +
            `errors ${sample.errors}${w.firstError ? ` (${w.firstError})` : ''}\n`,
        );
      }
    })();
    await Promise.all([...workers, exporter, purger, sampler]);
    if (samples.some((x) => x.errors > 0))
      console.error(`server output: ${own.process.output.slice(-20000)}`);
    report(o, own.engine, tenants.length, loadedAt, samples);
  } catch (error) {
    if (own.process.child?.exitCode !== null)
      console.error(`the server exited (${own.process.child?.exitCode}): ${own.process.output.slice(-3000)}`);
    throw error;
  } finally {
    await own.stop();
  }
}

type Sample = Record<string, any>;

/**
 * The windows compared: the first sample is warm-up; from 22 minutes on, the first ten minutes
 * after it against the last ten; a shorter run compares its first and last thirds. Memory is
 * compared from the end of the first window: the ten minutes after it (from 30 minutes on; a
 * backend lives ten minutes, so a ten-minute mean spans one renewal of them all), else the last
 * sample of the first window.
 */
function windows(samples: Sample[]): { first: Sample[]; second?: Sample[]; last: Sample[]; label: string } {
  const steady = samples.slice(1);
  const end = steady[steady.length - 1]?.minute ?? 0;
  if (end >= 22) {
    const from = steady[0].minute;
    const second = steady.filter((s) => s.minute > from + 10 && s.minute <= from + 20);
    return {
      first: steady.filter((s) => s.minute <= from + 10),
      second: end >= 30 && second.length > 0 ? second : undefined,
      last: steady.filter((s) => s.minute > end - 10),
      label:
        'the last ten minutes against the first ten (after the first sample, warm-up); memory: the last ten ' +
        (end >= 30 ? 'against the ten after the first ten' : 'against the end of the first ten'),
    };
  }
  const n = Math.max(1, Math.floor(steady.length / 3));
  return {
    first: steady.slice(0, n),
    last: steady.slice(-n),
    label:
      'the last third against the first third (first sample left out as warm-up); memory: the last third against the end of the first',
  };
}

const mean = (xs: Sample[], value: (s: Sample) => number) => xs.reduce((a, s) => a + value(s), 0) / xs.length;
const percentChange = (now: number, before: number) => Math.round((now / before - 1) * 1000) / 10;

/** Speed: the mean of the last window against the mean of the first. */
function drift(samples: Sample[], value: (s: Sample) => number): number {
  const { first, last } = windows(samples);
  return percentChange(mean(last, value), mean(first, value));
}

/** Memory: growth after the first window (see windows). */
function growth(samples: Sample[], value: (s: Sample) => number): number {
  const { first, second, last } = windows(samples);
  return percentChange(mean(last, value), second ? mean(second, value) : value(first[first.length - 1]));
}

function report(
  o: Options,
  engine: string,
  tenants: number,
  loadedAt: number[],
  samples: Array<Record<string, any>>,
  at = new Date().toISOString(),
): void {
  console.log(
    `\nsoak — ${engine}; ${o.minutes} min, ${o.connections} connections, ${tenants} tenants, ` +
      `${o.patients} Synthea patients; ${cpus().length} cores, load average ${loadedAt.map((l) => l.toFixed(2)).join(' ')} at start`,
  );
  printTable(samples.map(({ kinds: _k, serverStats: _s, firstError: _e, ...row }) => row));
  console.log('\nper kind (req/s, p50/p99 ms) in the first and the last sample:');
  const [first, lastSample] = [samples[Math.min(1, samples.length - 1)], samples[samples.length - 1]];
  printTable(
    // results of runs before a kind existed lack it
    KINDS.filter((k) => first.kinds[k] && lastSample.kinds[k]).map((k) => ({
      kind: k,
      'first req/s': first.kinds[k].perSecond,
      'first p50/p99': `${first.kinds[k].p50}/${first.kinds[k].p99}`,
      'last req/s': lastSample.kinds[k].perSecond,
      'last p50/p99': `${lastSample.kinds[k].p50}/${lastSample.kinds[k].p99}`,
      errors: samples.reduce((n, s) => n + (s.kinds[k]?.errors ?? 0), 0),
      'shed 429': samples.reduce((n, s) => n + (s.kinds[k]?.shed ?? 0), 0),
    })),
  );
  const drifts = {
    'throughput %': drift(samples, (s) => s['req/s']),
    'p99 %': drift(samples, (s) => s['p99 ms']),
    'server cpu/req %': drift(samples, (s) => s['server cpu ms/req']),
    'db cpu/req %': drift(samples, (s) => s['db cpu ms/req']),
    'load average %': drift(samples, (s) => s.load1),
    'server RSS %': growth(samples, (s) => s['server RSS MB']),
    'heap %': growth(samples, (s) => s['heap MB']),
    'db PSS %': growth(samples, (s) => s['db PSS MB']),
    'db private %': growth(samples, (s) => s['db private MB']),
  };
  console.log(`\n${windows(samples).label}:`);
  printTable([drifts]);
  mkdirSync(join(__dirname, 'results'), { recursive: true });
  const json = JSON.stringify(
    {
      at,
      engine,
      options: o,
      tenants,
      cores: cpus().length,
      loadAverageAtStart: loadedAt,
      windows: windows(samples).label,
      samples,
      drift: drifts,
      summary: Object.entries(drifts).map(([figure, value]) => ({
        figure: `drift ${figure}`,
        value,
        unit: '%',
      })),
    },
    null,
    2,
  );
  writeFileSync(join(__dirname, 'results', `${o.out}.json`), json);
  // the summary of `npm run bench` reads soak.json: the last run analysed, whatever its name
  if (o.out !== 'soak') writeFileSync(join(__dirname, 'results', 'soak.json'), json);
  const series = (name: string, key: string) => ({
    name,
    points: samples.map((s) => [s.minute, s[key]] as [number, number]),
  });
  writeFileSync(
    join(__dirname, 'results', `${o.out}.svg`),
    lineChartsSvg(
      [
        {
          title: 'throughput and latency',
          yName: 'req/s, ms',
          series: [series('req/s', 'req/s'), series('p99 ms', 'p99 ms')],
        },
        {
          title: 'memory',
          yName: 'MB',
          series: [
            series('server RSS', 'server RSS MB'),
            series('server heap used', 'heap MB'),
            series('database PSS', 'db PSS MB'),
            series('database private', 'db private MB'),
            series('database shared', 'db shared MB'),
            series('store on disk', 'store MB'),
          ],
        },
        {
          title: 'CPU per request and load',
          yName: 'ms, load',
          series: [
            series('server cpu ms/req', 'server cpu ms/req'),
            series('db cpu ms/req', 'db cpu ms/req'),
            series('load average (1 min)', 'load1'),
          ],
        },
      ],
      'minutes',
    ),
  );
  console.log(`\nwrote bench/results/${o.out}.json and bench/results/${o.out}.svg`);
}

main().catch((error) => {
  console.error(error instanceof Error ? error.message : error);
  process.exit(1);
});
