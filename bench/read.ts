/**
 * Read: autocannon, 32 connections, `GET /r4/Observation/{id}` over random ids of
 * the Synthea R4 sample loaded BENCH_COPIES times (default 5, ≈195,000 resources) through the API,
 * then the same point look-ups straight through the driver (`findOne` by `_id` and tenant, without
 * the index entries, as the app reads; 32 in flight, same duration) on the same database.
 * The API is served by the real server in its own process (bench/lib/bench-server serveInOwnProcess).
 * Target: API ≥ 0.6 × driver, p99 < 20 ms. Run: npm run bench -- read
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import autocannon from 'autocannon';
import { resourceKey } from '../libs/fhir/src/storage/keys';
import {
  createBenchUsers,
  printTable,
  serveInOwnProcess,
  startBenchServer,
  type BenchServer,
  type BenchUser,
} from './lib/bench-server';
import { loadSyntheaR4 } from './lib/synthea-load';

const CONNECTIONS = 32;
const DURATION_S = Number(process.env.BENCH_DURATION ?? 10);
const PATIENTS = process.env.BENCH_PATIENTS ? Number(process.env.BENCH_PATIENTS) : undefined;
const COPIES = Number(process.env.BENCH_COPIES ?? 5);

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

/** The read benchmark on loaded data: `ids` are Observations of `user` (also run by bench/ingest.ts). */
export async function benchReads(
  server: BenchServer,
  user: BenchUser,
  ids: readonly string[],
): Promise<void> {
  {
    const stored = await server.connection.db!.collection('resources').countDocuments();
    process.stderr.write(`${ids.length} Observations (${stored} documents in resources); reading\n`);
    const random = () => ids[Math.floor(Math.random() * ids.length)];
    // The server runs in a process of its own, as operators run it: in this process it would share
    // one event loop with the load generator (the driver loop below has no HTTP on either side).
    const own = await serveInOwnProcess(server);
    let api: autocannon.Result;
    try {
      const run = (duration: number) =>
        autocannon({
          url: own.url,
          connections: CONNECTIONS,
          duration,
          headers: { Authorization: `Bearer ${user.accessToken}` },
          requests: Array.from({ length: 2000 }, () => ({
            method: 'GET',
            path: `/r4/Observation/${random()}`,
          })),
        });
      await run(2); // warm-up, not counted: a fresh process compiles its hot paths first
      api = await run(DURATION_S);
    } finally {
      await own.stop();
    }
    const resources = server.connection.db!.collection('resources');
    const driver = await driverReads(
      () =>
        resources.findOne(
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
    const rows = [
      {
        path: 'HTTP GET /r4/Observation/{id}',
        'req/s': api.requests.average,
        'p50 ms': api.latency.p50,
        'p99 ms': api.latency.p99,
        non2xx: api.non2xx,
        errors: api.errors,
      },
      {
        path: 'driver findOne({_id, c, u}, no idx)',
        'req/s': driver.perSecond,
        'p50 ms': driver.p50,
        'p99 ms': driver.p99,
        non2xx: 0,
        errors: 0,
      },
    ];
    const ratio = api.requests.average / driver.perSecond;
    console.log(
      `\nread — ${server.engine}, ${CONNECTIONS} connections, ${DURATION_S}s, ${stored} documents, ` +
        `load average ${loadavg()
          .map((l) => l.toFixed(1))
          .join(' ')}`,
    );
    printTable(rows);
    console.log(`ratio API / driver: ${ratio.toFixed(2)} (target ≥ 0.6; p99 < 20 ms)`);
    const result = {
      engine: server.engine,
      connections: CONNECTIONS,
      durationSeconds: DURATION_S,
      documents: stored,
      loadAverage: loadavg(),
      observations: ids.length,
      rows,
      summary: [
        { figure: 'API req/s', value: api.requests.average },
        { figure: 'API p99', value: api.latency.p99, unit: 'ms', target: '< 20 ms' },
        { figure: 'driver findOne/s', value: driver.perSecond },
        { figure: 'API / driver', value: ratio, target: '≥ 0.6' },
      ],
    };
    mkdirSync(join(__dirname, 'results'), { recursive: true });
    writeFileSync(join(__dirname, 'results', 'read.json'), JSON.stringify(result, null, 2));
  }
}

async function main(): Promise<void> {
  const server = await startBenchServer();
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
