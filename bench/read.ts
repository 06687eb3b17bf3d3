/**
 * Read: autocannon, 32 connections, `GET /r4/Observation/{id}` over random ids of
 * the Synthea R4 sample loaded BENCH_COPIES times (default 5, ≈195,000 resources) through the API,
 * then the same reads from a floor server (Node's HTTP server and the app's driver call, no framework:
 * bench/lib/read-floor-server.ts), then the same point look-ups straight through the driver
 * (`findOneByCommand` by `_id` and tenant, without the index entries, as the app reads; 32 in flight, same
 * duration) on the same database, each with its CPU per read (server, engine, load generator);
 * beside the floor, its ladder (BENCH_READ_LADDER=none: none of it), the floor moved one step at a
 * time toward the app's process (client options, Mongoose, the app's heap, the read lane, stand-in
 * work per read whose CPU is counted apart), and the stack's own floor: Express alone and a minimal
 * Nest 11 controller on Express with the same driver call and reply;
 * between them a row per variant of the app (READ_VARIANTS: request logs on) and, with
 * BENCH_READ_BASELINE=<built checkouts, comma-separated>, a row of each other build (an A/B pair on the same data);
 * BENCH_READ_ROUNDS=n runs the app's rows n times, interleaved (CPU per read over all rounds), and
 * BENCH_READ_PROCESSES=n (default 2, 1: no such row) a row of n app processes on the same database,
 * the connections split among them and the read lane divided.
 * The API is served by the real server in its own process (bench/lib/bench-server serveInOwnProcess).
 * Target: API ≥ 0.6 × driver, p99 < 20 ms. Run: npm run bench -- read
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import autocannon from 'autocannon';
import { resourceKey } from '../libs/fhir/src/storage/keys';
import { findOneByCommand } from '../src/database/point-read';
import {
  createBenchUsers,
  printTable,
  serveInOwnProcess,
  startBenchServer,
  type BenchServer,
  type BenchUser,
} from './lib/bench-server';
import { cpuSeconds, descendantsNamed } from './lib/process-stats';
import { loadSyntheaR4 } from './lib/synthea-load';

const CONNECTIONS = 32;
const DURATION_S = Number(process.env.BENCH_DURATION ?? 10);
const PATIENTS = process.env.BENCH_PATIENTS ? Number(process.env.BENCH_PATIENTS) : undefined;
const COPIES = Number(process.env.BENCH_COPIES ?? 5);
/** The app again with other settings, a row each (BENCH_READ_VARIANTS=none: the three rows only). */
const READ_VARIANTS: ReadonlyArray<[string, Record<string, string>]> =
  process.env.BENCH_READ_VARIANTS === 'none'
    ? []
    : [
        ['HTTP GET, request logs on (LOG_LEVEL=info)', { LOG_LEVEL: 'info' }],
        // V8's own young generation (16 MB semi-spaces on Node 20) instead of npm start's 64 MB:
        // more scavenges per read, a smaller heap (docs/storage.md "The young generation")
        ['HTTP GET, 16 MB young generation (V8 default)', { SERVER_NODE_ARGS: '--max-semi-space-size=16' }],
        // as many reads at the engine at once as the floor lets through (32 connections) instead of 8:
        // whether a busier engine makes the app's sends cheaper (docs/storage.md "Reads measured")
        ['HTTP GET, read lane of 32 (SERVER_MAX_CONCURRENT_READS=32)', { SERVER_MAX_CONCURRENT_READS: '32' }],
      ];
/**
 * Other built checkouts of the server (directories with `dist/src/main.js`, e.g. main with a change
 * reverted; several: comma-separated) served as rows of their own between the app's rows: A/B pairs
 * on the same data and load. Its index definitions must be this build's: a server refuses to start on a store whose
 * index of the same name differs (ensureIndexes).
 */
const BASELINES = (process.env.BENCH_READ_BASELINE ?? '').split(',').filter(Boolean);
/** The app's rows (the app, the baseline, the variants) run this many times, interleaved. */
const ROUNDS = Math.max(1, Number(process.env.BENCH_READ_ROUNDS ?? 1));
/** BENCH_READ_PROCESSES=n (default 2; 1: none): a row of n app processes serving the reads together. */
const PROCESSES = Number(process.env.BENCH_READ_PROCESSES ?? 2);
/** The app's default read lane (SERVER_MAX_CONCURRENT_READS), divided among the processes of that row. */
const READ_LANE = 8;

async function driverReads(
  lookup: (i: number) => Promise<unknown>,
  seconds: number,
  concurrency: number,
): Promise<{ perSecond: number; p50: number; p99: number }> {
  const latencies: number[] = [];
  const end = Date.now() + seconds * 1000;
  let i = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (Date.now() < end) {
        const start = process.hrtime.bigint();
        await lookup(i++);
        latencies.push(Number(process.hrtime.bigint() - start) / 1e6);
      }
    }),
  );
  latencies.sort((a, b) => a - b);
  const at = (q: number) => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] ?? 0;
  return { perSecond: latencies.length / seconds, p50: at(0.5), p99: at(0.99) };
}

/** CPU per operation (µs) of the serving process, the embedded engine and this process (the load). */
interface CpuPerOp {
  server?: number;
  engine?: number;
  load: number;
}

/** Counts the CPU of `serverPid` (if any), the embedded engine and this process around `work`. */
async function withCpu<T extends { operations: number }>(
  serverPids: readonly number[] | undefined,
  work: () => Promise<T>,
): Promise<T & { cpu: CpuPerOp }> {
  const engine = () => descendantsNamed(process.pid, /^(postgres|postmaster|documentdb)/);
  const engineBefore = cpuSeconds(engine());
  const serverBefore = serverPids === undefined ? 0 : cpuSeconds([...serverPids]);
  const loadBefore = process.cpuUsage();
  const result = await work();
  const load = process.cpuUsage(loadBefore);
  const perOp = (seconds: number) => (seconds * 1e6) / Math.max(1, result.operations);
  const enginePids = engine();
  return {
    ...result,
    cpu: {
      server: serverPids === undefined ? undefined : perOp(cpuSeconds([...serverPids]) - serverBefore),
      // an external database (MONGO_URL) is not a child of this process: nothing to count
      engine: enginePids.length > 0 ? perOp(cpuSeconds(enginePids) - engineBefore) : undefined,
      load: perOp((load.user + load.system) / 1e6),
    },
  };
}

/** autocannon against `url` (warm-up first, not counted), with the CPU of the serving process. */
/** One HTTP row's figures: throughput, latency, answers other than 2xx, CPU per read. */
interface HttpRun {
  perSecond: number;
  p50: number;
  p99: number;
  non2xx: number;
  errors: number;
  operations: number;
  cpu: CpuPerOp;
}

/** Rounds of one row as one: mean throughput, median latencies, CPU per read over all reads. */
function combined(runs: readonly HttpRun[]): HttpRun {
  const median = (values: number[]) => values.sort((a, b) => a - b)[Math.floor(values.length / 2)];
  const operations = runs.reduce((sum, run) => sum + run.operations, 0);
  const perRead = (pick: (cpu: CpuPerOp) => number | undefined) => {
    if (runs.some((run) => pick(run.cpu) === undefined)) return undefined;
    return runs.reduce((sum, run) => sum + pick(run.cpu)! * run.operations, 0) / Math.max(1, operations);
  };
  return {
    perSecond: runs.reduce((sum, run) => sum + run.perSecond, 0) / runs.length,
    p50: median(runs.map((run) => run.p50)),
    p99: median(runs.map((run) => run.p99)),
    non2xx: runs.reduce((sum, run) => sum + run.non2xx, 0),
    errors: runs.reduce((sum, run) => sum + run.errors, 0),
    operations,
    cpu: {
      server: perRead((cpu) => cpu.server),
      engine: perRead((cpu) => cpu.engine),
      load: perRead((cpu) => cpu.load)!,
    },
  };
}

/**
 * autocannon against `url` (warm-up first, not counted), with the CPU of the serving process; with
 * several servers (`urls`, `pids`), the connections are split among them and all run at once.
 */
async function httpReads(
  url: string | readonly string[],
  serverPid: number | readonly number[],
  headers: Record<string, string>,
  paths: () => string,
): Promise<HttpRun> {
  const urls = typeof url === 'string' ? [url] : url;
  const run = (duration: number) =>
    Promise.all(
      urls.map((target) =>
        autocannon({
          url: target,
          connections: Math.max(1, Math.round(CONNECTIONS / urls.length)),
          duration,
          headers,
          requests: Array.from({ length: 2000 }, () => ({ method: 'GET', path: paths() })),
        }),
      ),
    );
  await run(2); // a fresh process compiles its hot paths first
  return withCpu(typeof serverPid === 'number' ? [serverPid] : serverPid, async () => {
    const results = await run(DURATION_S);
    const sum = (pick: (result: autocannon.Result) => number) =>
      results.reduce((total, result) => total + pick(result), 0);
    const worst = (pick: (result: autocannon.Result) => number) => Math.max(...results.map(pick));
    return {
      perSecond: sum((result) => result.requests.average),
      p50: worst((result) => result.latency.p50),
      p99: worst((result) => result.latency.p99),
      non2xx: sum((result) => result.non2xx),
      errors: sum((result) => result.errors),
      operations: sum((result) => result.requests.total),
    };
  });
}

/**
 * The floor rows: servers of bench/lib in processes of their own on the bench's data, the same driver
 * call and reply in each (bench/lib/read-floor-common.ts). The ladder moves the floor toward the app's
 * process one step at a time (BENCH_READ_LADDER=none: the floor only); the stack rows are Express
 * alone and a minimal Nest 11 controller on Express, the floor of the design's required stack.
 */
const FLOOR_ROWS: ReadonlyArray<{ label: string; script: string; env?: Record<string, string> }> = [
  { label: 'floor: node:http + same findOne', script: 'read-floor-server.ts' },
  ...(process.env.BENCH_READ_LADDER === 'none'
    ? []
    : [
        {
          label: "ladder: floor + the app's MongoClient options",
          script: 'read-floor-server.ts',
          env: { READ_FLOOR_CLIENT_OPTIONS: 'app' },
        },
        {
          label: 'ladder: + through a Mongoose connection',
          script: 'read-floor-server.ts',
          env: { READ_FLOOR_MONGOOSE: '1' },
        },
        {
          label: "ladder: + in the app's process (its heap, its connection)",
          script: 'read-floor-server.ts',
          env: { READ_FLOOR_APP_PROCESS: '1' },
        },
        {
          label: 'ladder: + a read lane of 8',
          script: 'read-floor-server.ts',
          env: { READ_FLOOR_APP_PROCESS: '1', READ_FLOOR_LANE: '8' },
        },
        {
          label: 'ladder: floor + 300 µs CPU per read, no allocation',
          script: 'read-floor-server.ts',
          env: { READ_FLOOR_WORK_US: '300', READ_FLOOR_WORK_KB: '0' },
        },
        {
          label: 'ladder: floor + 300 µs CPU per read, 60 KB kept to the reply',
          script: 'read-floor-server.ts',
          env: { READ_FLOOR_WORK_US: '300', READ_FLOOR_WORK_KB: '60' },
        },
      ]),
  { label: 'stack: Express alone + same findOne', script: 'read-express-floor-server.ts' },
  { label: 'stack: minimal Nest 11 on Express + same findOne', script: 'read-nest-floor-server.ts' },
];

/** A floor server of bench/lib in a process of its own; `stop` ends it and returns its added work. */
async function startFloor(
  server: BenchServer,
  user: BenchUser,
  script: string,
  env: Record<string, string> = {},
): Promise<{ url: string; child: ChildProcess; stop(): Promise<{ reads: number; workUs: number }> }> {
  // SERVER_NODE_ARGS (e.g. `--cpu-prof`) reach the floor as they reach the app: profiles of both
  const nodeArgs = (process.env.SERVER_NODE_ARGS ?? '').split(' ').filter(Boolean);
  const child = spawn(
    process.execPath,
    [...nodeArgs, '-r', 'ts-node/register/transpile-only', join(__dirname, 'lib', script)],
    {
      env: {
        ...process.env,
        ...env,
        READ_FLOOR_MONGO_URL: server.database.uri,
        READ_FLOOR_DB: server.dbName,
        READ_FLOOR_CLIENT: user.clientId,
        READ_FLOOR_USER: String(user.serviceUserId),
        READ_FLOOR_TIMEOUT_MS: String(server.settings.dbTimeoutMs),
      },
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  let out = '';
  child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
  const exited = new Promise<void>((done) => child.once('exit', () => done()));
  const port = await new Promise<number>((resolvePort, reject) => {
    child.stdout.on('data', () => {
      const match = /listening (\d+)/.exec(out);
      if (match) resolvePort(Number(match[1]));
    });
    child.once('exit', (code) => reject(new Error(`the floor server ${script} exited (${code})`)));
  });
  return {
    url: `http://127.0.0.1:${port}`,
    child,
    async stop() {
      child.kill('SIGTERM');
      await exited;
      const stats = /stats (\{.*\})/.exec(out);
      return stats ? (JSON.parse(stats[1]) as { reads: number; workUs: number }) : { reads: 0, workUs: 0 };
    },
  };
}

function cpuCells(cpu: CpuPerOp): Record<string, string> {
  const cell = (us?: number) => (us === undefined ? '-' : us.toFixed(0));
  return { 'server µs': cell(cpu.server), 'engine µs': cell(cpu.engine), 'load µs': cell(cpu.load) };
}

/**
 * The read benchmark on loaded data: `ids` are Observations of `user` (also run by bench/ingest.ts).
 * Three rows on the same data: the app; the floor (Node's HTTP server and the same driver call, no
 * framework: what the app's stack adds is the difference); the driver loop (no HTTP on either side).
 * CPU per read of each process tells where the time goes.
 */
export async function benchReads(
  server: BenchServer,
  user: BenchUser,
  ids: readonly string[],
): Promise<void> {
  const stored = await server.connection.db!.collection('resources').countDocuments();
  process.stderr.write(`${ids.length} Observations (${stored} documents in resources); reading\n`);
  const random = () => ids[Math.floor(Math.random() * ids.length)];
  const path = () => `/r4/Observation/${random()}`;
  // The servers run in processes of their own, as operators run them: in this process they would
  // share one event loop with the load generator.
  const auth = { Authorization: `Bearer ${user.accessToken}` };
  // The app, the baseline and the variants (what a setting costs per read; request logs: the API
  // row runs at BENCH_LOG_LEVEL, default silent, no request line; operators run at info, one line a
  // request), each a row, round after round so that the machine's other load weighs on all alike.
  const apps: Array<{ label: string; env: Record<string, string>; checkout?: string; processes?: number }> = [
    { label: 'HTTP GET /r4/Observation/{id}', env: {} },
    ...BASELINES.map((checkout) => ({ label: `baseline: ${checkout}`, env: {}, checkout })),
    ...READ_VARIANTS.map(([label, env]) => ({ label, env })),
    // N processes of the app on one database, the connections split among them, the read lane
    // divided (each process admits its own SERVER_MAX_CONCURRENT_READS: docs/storage.md)
    ...(PROCESSES > 1
      ? [
          {
            label: `${PROCESSES} server processes, ${Math.round(CONNECTIONS / PROCESSES)} connections each`,
            env: { SERVER_MAX_CONCURRENT_READS: String(Math.max(1, Math.floor(READ_LANE / PROCESSES))) },
            processes: PROCESSES,
          },
        ]
      : []),
  ];
  // the floor rows run in the same rounds, after the app's (BENCH_READ_ROUNDS: interleaved)
  const runs = apps.map(() => [] as HttpRun[]);
  const floorRuns = FLOOR_ROWS.map(() => [] as HttpRun[]);
  const floorAdded = FLOOR_ROWS.map(() => ({ reads: 0, workUs: 0 }));
  for (let round = 0; round < ROUNDS; round++) {
    for (const [i, app] of apps.entries()) {
      const servers = [];
      for (let n = 0; n < (app.processes ?? 1); n++)
        servers.push(await serveInOwnProcess(server, app.env, app.checkout));
      try {
        runs[i].push(
          await httpReads(
            servers.map((own) => own.url),
            servers.map((own) => own.child!.pid!),
            auth,
            path,
          ),
        );
      } finally {
        await Promise.all(servers.map((own) => own.stop()));
      }
    }
    for (const [i, row] of FLOOR_ROWS.entries()) {
      const floorServer = await startFloor(server, user, row.script, row.env);
      try {
        floorRuns[i].push(await httpReads(floorServer.url, floorServer.child.pid!, {}, path));
      } finally {
        const added = await floorServer.stop();
        floorAdded[i].reads += added.reads;
        floorAdded[i].workUs += added.workUs;
      }
    }
  }
  const [api, ...variants] = apps.map((app, i) => ({ label: app.label, run: combined(runs[i]) }));
  // the ladder's stand-in work per read (over the warm-up too: it is the same per read)
  const floors = FLOOR_ROWS.map((row, i) => ({
    label: row.label,
    run: combined(floorRuns[i]),
    addedUs: floorAdded[i].reads > 0 ? floorAdded[i].workUs / floorAdded[i].reads : undefined,
  }));
  const floor = floors[0].run;
  const resources = server.connection.db!.collection('resources');
  const driver = await withCpu(undefined, async () => {
    const reads = await driverReads(
      () =>
        findOneByCommand(
          resources,
          {
            _id: resourceKey('r4', user.clientId, 'Observation', random()) as any,
            c: user.clientId,
            u: user.serviceUserId,
          },
          { projection: { idx: 0 } },
        ),
      DURATION_S,
      CONNECTIONS,
    );
    return { ...reads, operations: Math.round(reads.perSecond * DURATION_S) };
  });
  const httpRow = (label: string, run: HttpRun, addedUs?: number) => ({
    path: label,
    'req/s': run.perSecond,
    'p50 ms': run.p50,
    'p99 ms': run.p99,
    non2xx: run.non2xx,
    errors: run.errors,
    ...cpuCells(run.cpu),
    'added µs': addedUs === undefined ? '-' : addedUs.toFixed(0),
  });
  const rows = [
    httpRow(api.label, api.run),
    ...variants.map(({ label, run }) => httpRow(label, run)),
    ...floors.map(({ label, run, addedUs }) => httpRow(label, run, addedUs)),
    {
      path: 'driver findOne({_id, c, u}, no idx)',
      'req/s': driver.perSecond,
      'p50 ms': driver.p50,
      'p99 ms': driver.p99,
      non2xx: 0,
      errors: 0,
      ...cpuCells(driver.cpu),
      'added µs': '-',
    },
  ];
  const ratio = api.run.perSecond / driver.perSecond;
  const ofFloor = api.run.perSecond / floor.perSecond;
  console.log(
    `\nread — ${server.engine}, ${CONNECTIONS} connections, ${DURATION_S}s, ${stored} documents, ` +
      `load average ${loadavg()
        .map((l) => l.toFixed(1))
        .join(' ')}; CPU µs per read (load: this process: autocannon, or the driver loop)`,
  );
  printTable(rows);
  console.log(
    `ratio API / driver: ${ratio.toFixed(2)} (target ≥ 0.6; p99 < 20 ms); API / floor: ${ofFloor.toFixed(2)}`,
  );
  // each floor row against the floor, as the app is judged (targets: reads/s ≥ 0.7×, CPU ≤ 1.5×)
  for (const { label, run } of floors.slice(1))
    console.log(
      `${label}: reads/s ${(run.perSecond / floor.perSecond).toFixed(2)}× the floor's, CPU per read ` +
        `${((run.cpu.server ?? 0) / Math.max(1, floor.cpu.server ?? 0)).toFixed(2)}×`,
    );
  const result = {
    engine: server.engine,
    connections: CONNECTIONS,
    durationSeconds: DURATION_S,
    documents: stored,
    loadAverage: loadavg(),
    observations: ids.length,
    rows,
    summary: [
      { figure: 'API req/s', value: api.run.perSecond },
      { figure: 'API p99', value: api.run.p99, unit: 'ms', target: '< 20 ms' },
      { figure: 'API server CPU / read', value: api.run.cpu.server ?? 0, unit: 'µs' },
      ...variants.map(({ label, run }) => ({
        figure: `${label}: server CPU / read`,
        value: run.cpu.server ?? 0,
        unit: 'µs',
      })),
      { figure: 'floor req/s', value: floor.perSecond },
      { figure: 'floor server CPU / read', value: floor.cpu.server ?? 0, unit: 'µs' },
      ...floors.slice(1).flatMap(({ label, run }) => [
        { figure: `${label}: req/s`, value: run.perSecond },
        { figure: `${label}: server CPU / read`, value: run.cpu.server ?? 0, unit: 'µs' },
      ]),
      { figure: 'driver findOne/s', value: driver.perSecond },
      { figure: 'API / driver', value: ratio, target: '≥ 0.6' },
      { figure: 'API / floor', value: ofFloor },
    ],
  };
  mkdirSync(join(__dirname, 'results'), { recursive: true });
  writeFileSync(join(__dirname, 'results', 'read.json'), JSON.stringify(result, null, 2));
}

async function main(): Promise<void> {
  // DB_TIMEOUT_MS (e.g. 60000 on a loaded machine, where loading the sample can outlast the
  // default deadline) reaches all three servers alike: the API's process inherits the environment.
  const server = await startBenchServer(
    process.env.DB_TIMEOUT_MS ? { DB_TIMEOUT_MS: process.env.DB_TIMEOUT_MS } : {},
  );
  try {
    const [user] = await createBenchUsers(server, 1, 1);
    process.stderr.write(`engine ${server.engine}; loading the sample\n`);
    const load = await loadSyntheaR4(server, {
      users: [user],
      parallel: 6,
      maxPatients: PATIENTS,
      copies: COPIES,
    });
    await benchReads(server, user, load.observationIds.get(0) ?? []);
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
