/**
 * Ingest: the Synthea R4 sample loaded BENCH_COPIES times (default 5, fresh ids per
 * copy: ≈195,000 resources) through the HTTP API in 20-entry transaction bundles (ids chosen
 * client-side) with BENCH_PARALLEL (default 6) bundles in flight, then the very same documents the
 * API stored (current + history rows, Provenances included) straight through the driver
 * (`insertMany`, ordered:false, batches of 1,000; only the inserts are timed) into a fresh database
 * with the same indexes on the same engine. Entries the server refuses (a stricter validator's UCUM
 * checks) are counted, not fatal. Target: API ≥ 0.5 × driver and ≥ 2,000 resources/s.
 * Run: npm run bench -- ingest   (BENCH_PATIENTS=20 BENCH_COPIES=1 for a quick partial run)
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import type { Document } from 'mongodb';
import { createBenchUsers, printTable, startBenchServer } from './lib/bench-server';
import { childrenCpuMs } from './lib/process-cpu';
import { loadSyntheaR4 } from './lib/synthea-load';
import { benchReads } from './read';
import { benchSearches, USERS as SEARCH_USERS } from './search';

const PARALLEL = Number(process.env.BENCH_PARALLEL ?? 6);
const USERS = Number(process.env.BENCH_USERS ?? SEARCH_USERS);
const PATIENTS = process.env.BENCH_PATIENTS ? Number(process.env.BENCH_PATIENTS) : undefined;
const COPIES = Number(process.env.BENCH_COPIES ?? 5);
const DRIVER_BATCH = 1000;

/** BENCH_DRIVER=0 leaves out the driver comparison (A/B runs of the API alone). */
const DRIVER = process.env.BENCH_DRIVER !== '0';

/** BENCH_THEN=read,search: run those benchmarks on the data this load stored, before the driver part. */
const THEN = new Set((process.env.BENCH_THEN ?? '').split(',').filter(Boolean));

async function main(): Promise<void> {
  // The search benchmark records the app's queries through command monitoring (METRICS_ENABLED).
  // FHIR_FULLTEXT=on|off from the environment: the deployment's full-text option (A/B runs).
  // A long database deadline: on a loaded machine a bundle may wait longer than the default 5 s.
  const options: Record<string, string> = { DB_TIMEOUT_MS: '60000' };
  if (process.env.FHIR_FULLTEXT) options.FHIR_FULLTEXT = process.env.FHIR_FULLTEXT;
  const server = await startBenchServer(
    THEN.has('search') ? { METRICS_ENABLED: 'true', ...options } : options,
  );
  try {
    const users = await createBenchUsers(server, 1, USERS);
    process.stderr.write(
      `engine ${server.engine}, full text ${server.settings.fullText ? 'on' : 'off'}; loading through ${server.baseUrl} with ${PARALLEL} in flight\n`,
    );
    const loadStarted = new Date().toISOString();
    let loadMiddle = loadStarted;
    // CPU, not wall time, is what a resource costs on a shared machine: the engine's processes
    // (children of this one) and this process (the server and the load generator together).
    const engineCpuBefore = childrenCpuMs();
    const processCpuBefore = process.cpuUsage();
    const api = await loadSyntheaR4(server, {
      users,
      parallel: PARALLEL,
      maxPatients: PATIENTS,
      copies: COPIES,
      onProgress: (done, total) => {
        if (done <= total / 2) loadMiddle = new Date().toISOString();
        if (done % 2000 === 0)
          process.stderr.write(`  ${done}/${total} bundles, load ${loadavg()[0].toFixed(1)}\n`);
      },
    });

    const engineCpuMs = childrenCpuMs() - engineCpuBefore;
    const { user, system } = process.cpuUsage(processCpuBefore);
    const processCpuMs = (user + system) / 1000;
    const documents = await storedDocuments(server);
    const cpu = {
      'engine CPU ms / 1,000 resources': (engineCpuMs / api.resources) * 1000,
      'server + load CPU ms / 1,000 resources': (processCpuMs / api.resources) * 1000,
      'documents / resource': documents / api.resources,
    };
    console.log(`\nCPU per 1,000 resources ingested (load average ${loadavg()[0].toFixed(1)})`);
    printTable([cpu]);

    if (THEN.has('read')) await benchReads(server, users[0], api.observationIds.get(0) ?? []);
    if (THEN.has('search')) await benchSearches(server, users, api, loadStarted, loadMiddle);

    if (!DRIVER) {
      writeResult({ engine: server.engine, copies: COPIES, loadAverage: loadavg(), api, cpu });
      return;
    }
    // The same documents, through the driver, into a database of their own on the same engine.
    const db = server.connection.db!;
    const target = server.connection.getClient().db(`${server.dbName}_driver`);
    // The same indexes as the API's collections, in one command each (inserting into an unindexed
    // collection is not the same work).
    const driverDocuments: Record<string, number> = {};
    for (const name of ['resources', 'resource_history']) {
      const indexes = (await db.collection(name).listIndexes().toArray()).filter((i) => i.name !== '_id_');
      await target.createCollection(name);
      await target.collection(name).createIndexes(indexes.map(({ key, name: n }) => ({ key, name: n })));
    }
    let insertNanos = 0n;
    for (const name of ['resources', 'resource_history']) {
      driverDocuments[name] = 0;
      // a pass over every stored document: the app connection's per-operation deadline (DB_TIMEOUT_MS)
      // applies per batch, not to the whole pass
      const cursor = db.collection(name).find({}, { timeoutMode: 'iteration' }).batchSize(DRIVER_BATCH);
      let batch: Document[] = [];
      const flush = async () => {
        const start = process.hrtime.bigint();
        await target.collection(name).insertMany(batch, { ordered: false, timeoutMS: 0 });
        insertNanos += process.hrtime.bigint() - start;
        driverDocuments[name] += batch.length;
        batch = [];
      };
      for await (const doc of cursor) {
        batch.push(doc);
        if (batch.length >= DRIVER_BATCH) await flush();
      }
      if (batch.length > 0) await flush();
    }
    const driverSeconds = Number(insertNanos) / 1e9;
    await target.dropDatabase();
    const driverPerSecond = api.resources / driverSeconds;
    const ratio = api.resourcesPerSecond / driverPerSecond;
    const rows = [
      {
        path: 'HTTP API (transaction bundles of 20)',
        resources: api.resources,
        documents: driverDocuments.resources + driverDocuments.resource_history,
        seconds: api.seconds,
        'resources/s': api.resourcesPerSecond,
      },
      {
        path: 'driver insertMany (same documents)',
        resources: api.resources,
        documents: driverDocuments.resources + driverDocuments.resource_history,
        seconds: driverSeconds,
        'resources/s': driverPerSecond,
      },
    ];
    console.log(
      `\ningest — ${server.engine}, ${COPIES} copies, ${PARALLEL} bundles in flight, ${USERS} users, ` +
        `refused entries ${api.failedEntries} (${api.failedBundles} bundles), load average ${loadavg()
          .map((l) => l.toFixed(1))
          .join(' ')}`,
    );
    printTable(rows);
    console.log(`ratio API / driver: ${ratio.toFixed(2)} (target ≥ 0.5)`);
    const result = {
      engine: server.engine,
      parallel: PARALLEL,
      users: USERS,
      bundles: api.bundles,
      failedEntries: api.failedEntries,
      failedBundles: api.failedBundles,
      copies: COPIES,
      loadAverage: loadavg(),
      rows,
      ratio,
      cpu,
      summary: [
        { figure: 'API resources/s', value: api.resourcesPerSecond, target: '≥ 2,000' },
        { figure: 'driver resources/s', value: driverPerSecond },
        { figure: 'API / driver', value: ratio, target: '≥ 0.5' },
      ],
    };
    writeResult(result);
  } finally {
    await server.close();
  }
}

/** Documents the load stored, current and history (per resource: the write layout's cost). */
async function storedDocuments(server: Awaited<ReturnType<typeof startBenchServer>>): Promise<number> {
  const db = server.connection.db!;
  const counts = await Promise.all(
    ['resources', 'resource_history'].map((name) => db.collection(name).estimatedDocumentCount()),
  );
  return counts[0] + counts[1];
}

function writeResult(result: object): void {
  mkdirSync(join(__dirname, 'results'), { recursive: true });
  writeFileSync(join(__dirname, 'results', 'ingest.json'), JSON.stringify(result, null, 2));
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
