/**
 * Single node vs sharded cluster, in the same run: the embedded DocumentDB (one PostgreSQL) and the
 * DocumentDB distributed kit (Citus: 1 coordinator + BENCH_WORKERS workers, default 2, collections
 * sharded as `store shard` does, docs/scaling.md), each behind the real app. Rounds alternate
 * single, cluster, single, cluster … (BENCH_ROUNDS, default 2) so that the other work on the machine
 * weighs on both alike. Each round, on each engine:
 *  - ingest: BENCH_PATIENTS Synthea R4 patients (default 5, ≈1,900 resources) for a fresh client's
 *    BENCH_USERS users (default 4), in 20-entry transaction bundles, BENCH_PARALLEL (6) in flight;
 *  - reads: BENCH_READS Observation reads by id (default 1,000, 8 in flight);
 *  - searches: typical user searches of the heaviest patient (patient+code, patient+date range,
 *    Condition by patient, $everything, _lastUpdated range), BENCH_SEARCHES each (default 20, 4 in flight).
 * Per phase: operations per second (wall clock, distorted by the machine's other load), and CPU per
 * operation of the engine's processes (/proc: PostgreSQL nodes and gateway) and of this process (the
 * app and the load generator): CPU is what other engineers' load does not inflate. Ratios are
 * cluster ÷ single node. Run: npm run bench -- cluster
 */
import { mkdirSync, mkdtempSync, chmodSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { mongo } from 'mongoose';
import { startCluster, type RunningCluster } from '../test/support/cluster';
import { loadSyntheaResources } from '../test/support/synthea-data';
import { detectShardEngine } from '../src/storage/shard-engine';
import { shardCollections } from '../src/storage/shard-keys';
import {
  createBenchUsers,
  httpJson,
  inParallel,
  printTable,
  startBenchServer,
  type BenchServer,
  type BenchUser,
} from './lib/bench-server';
import { descendantPids } from './lib/process-cpu';
import { treeCpuSeconds } from './lib/process-stats';
import { loadSyntheaR4 } from './lib/synthea-load';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 2);
const PATIENTS = Number(process.env.BENCH_PATIENTS ?? 5);
const USERS = Number(process.env.BENCH_USERS ?? 4);
const PARALLEL = Number(process.env.BENCH_PARALLEL ?? 6);
const READS = Number(process.env.BENCH_READS ?? 1000);
const SEARCHES = Number(process.env.BENCH_SEARCHES ?? 20);
const WORKERS = Number(process.env.BENCH_WORKERS ?? 2);
/** A loaded shared machine makes single operations slow: no per-operation deadline in the way. */
const APP_ENV = { DIRECTORY_SEED: 'false', DB_TIMEOUT_MS: '60000' };

interface Engine {
  name: 'single node' | 'cluster';
  server: BenchServer;
  /** Roots of the engine's process trees (postmasters and gateway, or the cluster's start script). */
  roots: number[];
  /** Clients made so far (one per round: fresh ids without a copy suffix). */
  round: number;
  /** The cluster's nodes by name (gateway, coord, worker1 …): root pid of each process tree. */
  nodes: Map<string, number>;
}

interface Phase {
  engine: string;
  round: number;
  phase: string;
  ops: number;
  seconds: number;
  engineCpuSeconds: number;
  appCpuSeconds: number;
  /** Per node of the cluster: CPU seconds. */
  nodeCpuSeconds: Record<string, number>;
}

/** Runs `work` (which does `ops` operations) and measures wall time and CPU of engine and app. */
async function measure(engine: Engine, phase: string, work: () => Promise<number>): Promise<Phase> {
  const nodesBefore = new Map([...engine.nodes].map(([name, pid]) => [name, treeCpuSeconds([pid])]));
  const engineBefore = treeCpuSeconds(engine.roots);
  const appBefore = process.cpuUsage();
  const start = process.hrtime.bigint();
  const ops = await work();
  const seconds = Number(process.hrtime.bigint() - start) / 1e9;
  const app = process.cpuUsage(appBefore);
  return {
    engine: engine.name,
    round: engine.round,
    phase,
    ops,
    seconds,
    engineCpuSeconds: treeCpuSeconds(engine.roots) - engineBefore,
    appCpuSeconds: (app.user + app.system) / 1e6,
    nodeCpuSeconds: Object.fromEntries(
      [...engine.nodes].map(([name, pid]) => [name, treeCpuSeconds([pid]) - nodesBefore.get(name)!]),
    ),
  };
}

/** The cluster's processes below its start script: each PostgreSQL node (by data folder) and the gateway. */
function clusterNodes(script: number): Map<string, number> {
  const nodes = new Map<string, number>();
  for (const pid of descendantPids(script)) {
    const line = cmdline(pid);
    const dataDir = / -D (\S+)/.exec(line)?.[1];
    if (dataDir && /\/postgres /.test(line)) nodes.set(dataDir.split('/').pop()!, pid);
    else if (line.includes('documentdb_gateway')) nodes.set('gateway', pid);
  }
  return nodes;
}

function cmdline(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0/g, ' ');
  } catch {
    return '';
  }
}

const directChildren = (): number[] =>
  descendantPids(process.pid).filter((pid) => {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) === process.pid;
    } catch {
      return false;
    }
  });

/** The patient with the most resources among the first `PATIENTS`, and the user it went to. */
function heaviestPatient(patients: number): { id: string; userIndex: number } {
  let index = -1;
  const counts: Array<{ id: string; index: number; count: number }> = [];
  for (const resource of loadSyntheaResources('r4', patients)) {
    if (resource.resourceType === 'Patient')
      counts.push({ id: String(resource.id), index: ++index, count: 0 });
    if (counts.length > 0) counts[counts.length - 1].count++;
  }
  const heaviest = counts.sort((a, b) => b.count - a.count)[0];
  // patients go round-robin to the users (bench/lib/synthea-load.ts)
  return { id: heaviest.id, userIndex: heaviest.index % USERS };
}

async function round(engine: Engine, patients = PATIENTS): Promise<Phase[]> {
  engine.round++;
  const users = await createBenchUsers(engine.server, 1, USERS);
  const phases: Phase[] = [];
  let observations: string[] = [];
  const loadStarted = new Date().toISOString();
  phases.push(
    await measure(engine, 'ingest (resources)', async () => {
      const load = await loadSyntheaR4(engine.server, { users, parallel: PARALLEL, maxPatients: patients });
      if (load.failedBundles > 0) throw new Error(`${engine.name}: ${load.failedBundles} bundles refused`);
      observations = load.observationIds.get(0) ?? [];
      return load.resources;
    }),
  );
  const reader = users[0];
  phases.push(
    await measure(engine, 'read by id', async () => {
      await inParallel(READS, 8, async (i) => {
        await expectOk(engine, reader, `/r4/Observation/${observations[i % observations.length]}`);
      });
      return READS;
    }),
  );
  const patient = heaviestPatient(patients);
  const owner = users[patient.userIndex];
  const p = patient.id;
  const searches = [
    `/r4/Observation?subject=Patient/${p}&code=http://loinc.org|8302-2`,
    `/r4/Observation?subject=Patient/${p}&date=ge2015&date=lt2020`,
    `/r4/Condition?patient=Patient/${p}`,
    `/r4/Patient/${p}/$everything`,
    `/r4/Observation?_lastUpdated=ge${loadStarted}&_count=20`,
  ];
  phases.push(
    await measure(engine, 'searches', async () => {
      await inParallel(SEARCHES * searches.length, 4, async (i) => {
        await expectOk(engine, owner, searches[i % searches.length]);
      });
      return SEARCHES * searches.length;
    }),
  );
  return phases;
}

async function expectOk(engine: Engine, user: BenchUser, path: string): Promise<void> {
  const res = await httpJson(engine.server.baseUrl, 'GET', path, undefined, {
    Authorization: `Bearer ${user.accessToken}`,
  });
  if (res.status !== 200) throw new Error(`${engine.name} ${path}: ${res.status}`);
}

async function main(): Promise<void> {
  const before = new Set(directChildren());
  const single = await startBenchServer(APP_ENV);
  const singleRoots = directChildren().filter((pid) => !before.has(pid));
  const dir = mkdtempSync(join(tmpdir(), 'fhir-bench-cluster-'));
  // Run as root, the cluster runs as the `postgres` OS user, which must reach the folder.
  chmodSync(dir, 0o755);
  let cluster: RunningCluster | undefined;
  let sharded: BenchServer | undefined;
  try {
    process.stderr.write(`starting the cluster (1 coordinator + ${WORKERS} workers) in ${dir}\n`);
    cluster = await startCluster(join(dir, 'cluster'), { workers: WORKERS });
    const script = descendantPids(process.pid).filter((pid) => cmdline(pid).includes('docdb-start-cluster'));
    sharded = await startBenchServer(APP_ENV, cluster.uri);
    const client = await mongo.MongoClient.connect(cluster.uri);
    try {
      await shardCollections(client, sharded.dbName, await detectShardEngine(client, sharded.dbName));
    } finally {
      await client.close();
    }
    const engines: Engine[] = [
      { name: 'single node', server: single, roots: singleRoots, round: 0, nodes: new Map() },
      { name: 'cluster', server: sharded, roots: script, round: 0, nodes: clusterNodes(script[0]) },
    ];
    // A first round on each, not counted: the app compiles its hot paths, the engines warm their caches.
    for (const engine of engines) {
      process.stderr.write(`warm-up: ${engine.name}\n`);
      await round(engine, 1);
    }
    const phases: Phase[] = [];
    for (let r = 0; r < ROUNDS; r++) {
      for (const engine of engines) {
        process.stderr.write(`round ${r + 1}: ${engine.name}, load ${loadavg()[0].toFixed(1)}\n`);
        phases.push(...(await round(engine)));
      }
    }
    report(phases, single.engine);
  } finally {
    await sharded?.close();
    await cluster?.stop();
    await single.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

function report(phases: Phase[], engineLabel: string): void {
  const rows = phases.map((p) => ({
    engine: p.engine,
    round: p.round,
    phase: p.phase,
    'ops/s': p.ops / p.seconds,
    'engine CPU ms/op': (p.engineCpuSeconds * 1000) / p.ops,
    'app CPU ms/op': (p.appCpuSeconds * 1000) / p.ops,
  }));
  const load = loadavg()
    .map((l) => l.toFixed(1))
    .join(' ');
  console.log(
    `\ncluster vs single node — ${PATIENTS} patients × ${USERS} users per round, ${ROUNDS} rounds alternated, ` +
      `${WORKERS} workers, load average ${load} (2 cores shared)`,
  );
  printTable(rows);
  // Ratios of the sums over all rounds: cluster ÷ single node.
  const total = (engine: string, phase: string) => {
    const of = phases.filter((p) => p.engine === engine && p.phase === phase);
    const sum = (f: (p: Phase) => number) => of.reduce((s, p) => s + f(p), 0);
    return {
      opsPerSecond: sum((p) => p.ops) / sum((p) => p.seconds),
      engineCpuMsPerOp: (sum((p) => p.engineCpuSeconds) * 1000) / sum((p) => p.ops),
      appCpuMsPerOp: (sum((p) => p.appCpuSeconds) * 1000) / sum((p) => p.ops),
    };
  };
  const ratios = [...new Set(phases.map((p) => p.phase))].map((phase) => {
    const s = total('single node', phase);
    const c = total('cluster', phase);
    return {
      phase,
      'ops/s ratio': c.opsPerSecond / s.opsPerSecond,
      'engine CPU/op ratio': c.engineCpuMsPerOp / s.engineCpuMsPerOp,
      'app CPU/op ratio': c.appCpuMsPerOp / s.appCpuMsPerOp,
    };
  });
  console.log('\ncluster ÷ single node (all rounds)');
  printTable(ratios);
  // Where the cluster's engine CPU goes: the gateway and coordinator see every operation, the
  // workers only their shards' share.
  const clusterPhases = phases.filter((p) => p.engine === 'cluster');
  const nodeNames = Object.keys(clusterPhases[0]?.nodeCpuSeconds ?? {}).sort();
  const split = [...new Set(clusterPhases.map((p) => p.phase))].map((phase) => {
    const of = clusterPhases.filter((p) => p.phase === phase);
    const ops = of.reduce((s, p) => s + p.ops, 0);
    return {
      phase,
      ...Object.fromEntries(
        nodeNames.map((name) => [
          `${name} CPU ms/op`,
          (of.reduce((s, p) => s + p.nodeCpuSeconds[name], 0) * 1000) / ops,
        ]),
      ),
    };
  });
  console.log('\ncluster engine CPU per node');
  printTable(split);
  mkdirSync(join(__dirname, 'results'), { recursive: true });
  writeFileSync(
    join(__dirname, 'results', 'cluster.json'),
    JSON.stringify(
      {
        engine: `${engineLabel} vs DocumentDB distributed (Citus, ${WORKERS} workers)`,
        patients: PATIENTS,
        users: USERS,
        rounds: ROUNDS,
        loadAverage: loadavg(),
        phases: rows,
        ratios,
        clusterCpuPerNode: split,
        summary: ratios.flatMap((r) => [
          { figure: `${r.phase}: cluster/single ops/s`, value: r['ops/s ratio'] },
          { figure: `${r.phase}: cluster/single engine CPU per op`, value: r['engine CPU/op ratio'] },
        ]),
      },
      null,
      2,
    ),
  );
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
