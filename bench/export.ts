/**
 * Bulk export benchmark: Synthea R4 (100 patients, ≈39k resources) stored N times
 * (EXPORT_BENCH_COPIES, default 10 → ≈390k) under N users of one client, then
 *   1. the manifest for the whole client (`x-service-user-id: client`), timed;
 *   2. every file downloaded over 4 parallel connections: resources/s overall and per connection;
 *   3. the server's RSS (a child process, sampled from /proc every 50 ms): baseline and peak.
 * The data is written straight into `resources` in the storage shape of docs/storage.md (current
 * versions, meta stamped, search index left out: export does not read it) — loading 390k resources
 * through the API is the ingest benchmark's job, not this one's.
 * Run: `npm run bench -- export` (MONGO_URL to use a MongoDB; otherwise the embedded engine).
 */
import { readFileSync, writeFileSync, mkdtempSync } from 'fs';
import { tmpdir } from 'os';
import { join } from 'path';
import { MongoClient } from 'mongodb';
import { buildIfNeeded, runCli, ServerProcess } from '../test/support/server-process';
import { loadSyntheaResources } from '../test/support/synthea-data';
import { resolveDatabase } from '../src/database/embedded-database';
import { call } from './lib/fhir-load';

const COPIES = Number(process.env.EXPORT_BENCH_COPIES ?? 10);
const CONNECTIONS = 4;
const root = join(__dirname, '..');

/** Synthea R4, one copy of each resource (Practitioners and Organizations repeat across bundles). */
function syntheaResources(): Array<Record<string, any>> {
  const unique = new Map<string, Record<string, any>>();
  for (const resource of loadSyntheaResources('r4')) {
    unique.set(`${String(resource.resourceType)}/${String(resource.id)}`, resource);
  }
  return [...unique.values()];
}

function rssMb(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0) / 1024;
}

async function engineOf(mongo: MongoClient): Promise<string> {
  const info = await mongo.db('admin').command({ buildInfo: 1 });
  return info.gitVersion ? `MongoDB ${info.version}` : `MongoDB-compatible engine (wire ${info.version})`;
}

/**
 * The raw driver doing the download's work: every live resource of the client, type by type over
 * 4 connections, in key order with the same batch size, each document's stored JSON as one line.
 */
async function driverDownload(
  collection: ReturnType<ReturnType<MongoClient['db']>['collection']>,
  clientId: string,
  types: string[],
): Promise<{ resourcesPerSecond: number; megabytes: number }> {
  let next = 0;
  let resources = 0;
  let lineBytes = 0;
  const start = performance.now();
  await Promise.all(
    Array.from({ length: CONNECTIONS }, async () => {
      while (next < types.length) {
        const t = types[next++];
        const cursor = collection
          .find({ v: 'r4', c: clientId, t, del: false }, { projection: { _id: 0, json: 1 } })
          .sort({ _id: 1 })
          .batchSize(200);
        for await (const doc of cursor) {
          // the NDJSON line the API would send
          lineBytes += Buffer.byteLength(`${String(doc.json)}\n`);
          resources += 1;
        }
      }
    }),
  );
  return {
    resourcesPerSecond: (resources / (performance.now() - start)) * 1000,
    megabytes: lineBytes / 1048576,
  };
}

interface ServerMemory {
  heapUsed: number;
  heapTotal: number;
  external: number;
}

/** MB figures from the server's /metrics (METRICS_ENABLED). */
async function serverMemory(url: string): Promise<ServerMemory> {
  const text = await (await fetch(`${url}/metrics`)).text();
  const metric = (name: string) =>
    Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1] ?? NaN) / 1048576;
  return {
    heapUsed: metric('nodejs_heap_size_used_bytes'),
    heapTotal: metric('nodejs_heap_size_total_bytes'),
    external: metric('nodejs_external_memory_bytes'),
  };
}

async function main(): Promise<void> {
  buildIfNeeded();
  const dir = mkdtempSync(join(tmpdir(), 'bench-export-'));
  const database = await resolveDatabase(process.env.MONGO_URL, join(dir, 'db'));
  const dbName = `bench_export_${Date.now()}`;
  const env = {
    MONGO_URL: database.uri,
    MONGO_DB: dbName,
    DATA_DIR: join(dir, 'data'),
    LOG_LEVEL: 'warn',
    USER_MGMT_RATE_LIMIT: '1000000',
    EXPORT_LINK_TTL: '86400',
    METRICS_ENABLED: 'true',
  };
  const mongo = await MongoClient.connect(database.uri);
  const server = new ServerProcess(env);
  try {
    const engine = database.description ?? (await engineOf(mongo));
    const created = runCli(['client', 'create', '--name', 'bench export'], env);
    if (created.status !== 0) throw new Error(`client create failed: ${created.stdout}`);
    const { client_id, client_secret } = created.json as { client_id: string; client_secret: string };
    await server.start();
    const users: number[] = [];
    for (let i = 0; i < COPIES; i += 1) {
      const res = await call(`${server.url}/user-management/v1/user`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify({ app_user_id: `bench-${i}`, client_id, client_secret }),
      });
      users.push(Number(res.body.service_user_id));
    }
    const resources = syntheaResources();
    const collection = mongo.db(dbName).collection('resources');
    const loadStart = Date.now();
    for (const [copy, u] of users.entries()) {
      let batch: Array<Record<string, unknown>> = [];
      for (const resource of resources) {
        const id = `${resource.id}-${copy}`;
        const lu = new Date();
        const json = JSON.stringify({
          ...resource,
          id,
          meta: { versionId: '1', lastUpdated: lu.toISOString() },
        });
        const t = resource.resourceType as string;
        batch.push({
          _id: `r4|${client_id}|${t}|${id}`,
          v: 'r4',
          c: client_id,
          u,
          t,
          id,
          vid: 1,
          lu,
          del: false,
          json,
        });
        if (batch.length === 2000) {
          await collection.insertMany(batch, { ordered: false });
          batch = [];
        }
      }
      if (batch.length) await collection.insertMany(batch, { ordered: false });
      process.stderr.write(`\rloaded copy ${copy + 1}/${COPIES}`);
    }
    const total = resources.length * COPIES;
    process.stderr.write(
      `\n${total} resources loaded in ${((Date.now() - loadStart) / 1000).toFixed(1)} s\n`,
    );

    const headers = { client_id, client_secret, 'x-service-user-id': 'client' };
    const pid = server.child!.pid!;
    const baselineRss = rssMb(pid);
    let peakRss = baselineRss;
    const sampler = setInterval(() => (peakRss = Math.max(peakRss, rssMb(pid))), 50);
    // where the server's memory is (prom-client's process metrics), at its largest during the download
    const memoryBefore = await serverMemory(server.url);
    const memoryPeak = { ...memoryBefore };
    const memorySampler = setInterval(() => {
      void serverMemory(server.url).then((m) => {
        for (const k of Object.keys(m) as Array<keyof ServerMemory>)
          memoryPeak[k] = Math.max(memoryPeak[k], m[k]);
      });
    }, 250);

    const manifestTimes: number[] = [];
    let manifest: { output: Array<{ type: string; url: string; count: number }> } | undefined;
    const rounds = 3;
    for (let i = 0; i < rounds; i += 1) {
      const start = performance.now();
      const res = await call(`${server.url}/bulk-data/r4/$export`, { headers });
      manifestTimes.push(performance.now() - start);
      if (res.status !== 200) throw new Error(`manifest: ${res.status} ${JSON.stringify(res.body)}`);
      manifest = res.body;
    }
    const files = manifest!.output;
    const listed = files.reduce((n, f) => n + f.count, 0);

    let next = 0;
    const perConnection: Array<{ resources: number; bytes: number; ms: number }> = [];
    const downloadStart = performance.now();
    await Promise.all(
      Array.from({ length: CONNECTIONS }, async () => {
        const mine = { resources: 0, bytes: 0, ms: 0 };
        while (next < files.length) {
          const file = files[next++];
          const start = performance.now();
          const res = await fetch(file.url.replace(/^https?:\/\/[^/]+/, server.url), { headers });
          if (res.status !== 200) throw new Error(`download: ${res.status}`);
          let lines = 0;
          for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
            mine.bytes += chunk.length;
            for (const byte of chunk) if (byte === 10) lines += 1;
          }
          if (lines !== file.count)
            process.stderr.write(`warning: ${file.type} file has ${lines}, listed ${file.count}\n`);
          mine.resources += lines;
          mine.ms += performance.now() - start;
        }
        perConnection.push(mine);
      }),
    );
    const downloadMs = performance.now() - downloadStart;
    clearInterval(sampler);
    clearInterval(memorySampler);
    const driver = await driverDownload(collection, client_id, [...new Set(files.map((f) => f.type))]);
    const downloaded = perConnection.reduce((n, c) => n + c.resources, 0);
    const bytes = perConnection.reduce((n, c) => n + c.bytes, 0);
    const perConnRate = perConnection.map((c) => (c.resources / c.ms) * 1000);
    const result = {
      engine,
      copies: COPIES,
      resources: total,
      files: files.length,
      listed,
      downloaded,
      manifestMs: Math.min(...manifestTimes),
      manifestMsAll: manifestTimes.map((m) => Math.round(m)),
      downloadSeconds: downloadMs / 1000,
      megabytes: bytes / 1048576,
      resourcesPerSecond: (downloaded / downloadMs) * 1000,
      resourcesPerSecondPerConnection: perConnRate.reduce((a, b) => a + b, 0) / perConnRate.length,
      serverRssBaselineMb: baselineRss,
      serverRssPeakMb: peakRss,
      serverRssGrowthMb: peakRss - baselineRss,
      driverResourcesPerSecond: driver.resourcesPerSecond,
      ratioToDriver: ((downloaded / downloadMs) * 1000) / driver.resourcesPerSecond,
      summary: [] as Array<{ figure: string; value: number; unit: string; target?: string }>,
    };
    result.summary = [
      { figure: 'manifest, whole client', value: result.manifestMs, unit: 'ms', target: '< 2000' },
      {
        figure: 'download, 4 connections',
        value: result.resourcesPerSecond,
        unit: 'resources/s',
        target: '≥ 20000',
      },
      { figure: 'driver, same reads, 4 connections', value: driver.resourcesPerSecond, unit: 'resources/s' },
      { figure: 'download / driver', value: result.ratioToDriver, unit: '×' },
      { figure: 'server RSS growth', value: result.serverRssGrowthMb, unit: 'MB', target: '< 100' },
    ];
    console.log(
      `\nbulk export — ${engine}, ${total} resources (${COPIES} × Synthea R4), ${files.length} files`,
    );
    console.log('figure                          | value');
    console.log('--------------------------------|------------------');
    const row = (k: string, v: string) => console.log(`${k.padEnd(32)}| ${v}`);
    row(
      `manifest (best of ${rounds})`,
      `${result.manifestMs.toFixed(0)} ms (${result.manifestMsAll.join(', ')})`,
    );
    row('resources listed / downloaded', `${listed} / ${downloaded}`);
    row('download wall time', `${result.downloadSeconds.toFixed(1)} s, ${result.megabytes.toFixed(0)} MB`);
    row('resources/s overall', result.resourcesPerSecond.toFixed(0));
    row('resources/s per connection', result.resourcesPerSecondPerConnection.toFixed(0));
    row('driver, same reads, 4 conns', `${driver.resourcesPerSecond.toFixed(0)} resources/s`);
    row('API / driver', result.ratioToDriver.toFixed(2));
    row('server RSS baseline / peak', `${baselineRss.toFixed(0)} / ${peakRss.toFixed(0)} MB`);
    row('server RSS growth', `${result.serverRssGrowthMb.toFixed(0)} MB`);
    for (const k of Object.keys(memoryBefore) as Array<keyof ServerMemory>) {
      row(`  ${k} before / peak`, `${memoryBefore[k].toFixed(0)} / ${memoryPeak[k].toFixed(0)} MB`);
    }
    writeFileSync(join(root, 'bench', 'results', 'export.json'), JSON.stringify(result, null, 2));
  } finally {
    await server.stop();
    await mongo
      .db(dbName)
      .dropDatabase()
      .catch(() => undefined);
    await mongo.close();
    await database.stop();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
