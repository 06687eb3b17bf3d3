/**
 * Ingest (issue 4): the Synthea R4 sample through the HTTP API in 20-entry transaction bundles
 * (ids chosen client-side) with BENCH_PARALLEL (default 6) bundles in flight, then the very same
 * documents the API stored (current + history rows, Provenances included) straight through the
 * driver (`insertMany`, ordered:false, batches of 1,000) into a fresh database on the same engine.
 * Target: API ≥ 0.5 × driver; on MongoDB ≥ 2,500 resources/s.
 * Run: npx ts-node --transpile-only -r tsconfig-paths/register bench/ingest.ts
 *      (BENCH_PATIENTS=20 for a quicker partial run)
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createBenchUsers, printTable, startBenchServer } from './lib/bench-server';
import { loadSyntheaR4 } from './lib/synthea-load';

const PARALLEL = Number(process.env.BENCH_PARALLEL ?? 6);
const USERS = Number(process.env.BENCH_USERS ?? 4);
const PATIENTS = process.env.BENCH_PATIENTS ? Number(process.env.BENCH_PATIENTS) : undefined;
const DRIVER_BATCH = 1000;

async function main(): Promise<void> {
  const server = await startBenchServer();
  try {
    const users = await createBenchUsers(server, 1, USERS);
    process.stderr.write(
      `engine ${server.engine}; loading through ${server.baseUrl} with ${PARALLEL} in flight\n`,
    );
    const api = await loadSyntheaR4(server, {
      users,
      parallel: PARALLEL,
      maxPatients: PATIENTS,
      onProgress: (done, total) => process.stderr.write(`  ${done}/${total} bundles\n`),
    });

    // The same documents, through the driver, into a database of their own on the same engine.
    const db = server.connection.db!;
    const current = await db.collection('resources').find({}).toArray();
    const history = await db.collection('resource_history').find({}).toArray();
    const target = server.connection.getClient().db(`${server.dbName}_driver`);
    // The same indexes as the API's collections: inserting into an unindexed collection is not the same work.
    for (const name of ['resources', 'resource_history']) {
      for (const index of await db.collection(name).listIndexes().toArray()) {
        if (index.name !== '_id_') await target.collection(name).createIndex(index.key, { name: index.name });
      }
    }
    const start = process.hrtime.bigint();
    for (const [name, docs] of [
      ['resources', current],
      ['resource_history', history],
    ] as const) {
      for (let i = 0; i < docs.length; i += DRIVER_BATCH) {
        await target.collection(name).insertMany(docs.slice(i, i + DRIVER_BATCH), { ordered: false });
      }
    }
    const driverSeconds = Number(process.hrtime.bigint() - start) / 1e9;
    await target.dropDatabase();
    const driverPerSecond = api.resources / driverSeconds;
    const ratio = api.resourcesPerSecond / driverPerSecond;
    const rows = [
      {
        path: 'HTTP API (transaction bundles of 20)',
        resources: api.resources,
        documents: current.length + history.length,
        seconds: api.seconds,
        'resources/s': api.resourcesPerSecond,
      },
      {
        path: 'driver insertMany (same documents)',
        resources: api.resources,
        documents: current.length + history.length,
        seconds: driverSeconds,
        'resources/s': driverPerSecond,
      },
    ];
    console.log(
      `\ningest — ${server.engine}, ${PARALLEL} bundles in flight, ${USERS} users, failed entries ${api.failedEntries}`,
    );
    printTable(rows);
    console.log(`ratio API / driver: ${ratio.toFixed(2)} (target ≥ 0.5)`);
    const result = {
      engine: server.engine,
      parallel: PARALLEL,
      users: USERS,
      bundles: api.bundles,
      failedEntries: api.failedEntries,
      rows,
      ratio,
      summary: [
        { figure: 'API resources/s', value: api.resourcesPerSecond, target: '≥ 2,500 on MongoDB' },
        { figure: 'driver resources/s', value: driverPerSecond },
        { figure: 'API / driver', value: ratio, target: '≥ 0.5' },
      ],
    };
    mkdirSync(join(__dirname, 'results'), { recursive: true });
    writeFileSync(join(__dirname, 'results', 'ingest.json'), JSON.stringify(result, null, 2));
  } finally {
    await server.close();
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
