/**
 * Write protocol with and without multi-document transactions: the database work
 * of bundle ingest — per 20-entry bundle one `insertMany` of the current documents, one of their
 * history rows plus the Provenances' history rows, one of the Provenances' current documents
 * (write-protocol.ts `complete`) — done by the driver, BENCH_PARALLEL (default 6) bundles in
 * flight, once as today (three independent writes) and once inside one transaction per bundle
 * (`withTransaction`). Documents are built from the Synthea R4 sample with the real index
 * extraction, in databases with the app's indexes. Prints a table, writes
 * bench/results/write-transactions.json. Run: npm run bench -- write-transactions
 *   BENCH_PATIENTS=<n> (default 30), BENCH_ROUNDS=<n> alternating rounds per mode (default 2).
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import type { mongo } from 'mongoose';
import { extractIndex, historyKey, resourceKey } from '../libs/fhir/src';
import { loadSyntheaResources } from '../test/support/synthea-data';
import { inParallel, printTable, startBenchServer } from './lib/bench-server';

const PARALLEL = Number(process.env.BENCH_PARALLEL ?? 6);
const PATIENTS = Number(process.env.BENCH_PATIENTS ?? 30);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 2);
const BUNDLE = 20;

// The driver Mongoose runs (it may differ from a top-level `mongodb`).
type Db = mongo.Db;
type Document = mongo.Document;

type Mode = 'three writes' | 'one transaction';

function docsOf(resource: Record<string, unknown>, round: number, lu: Date) {
  const type = String(resource.resourceType);
  const id = `${String(resource.id)}-${round}`;
  const key = resourceKey('r4', 'bench-client', type, id);
  const json = JSON.stringify({ ...resource, id, meta: { versionId: '1', lastUpdated: lu.toISOString() } });
  const base = { v: 'r4', c: 'bench-client', u: 1, t: type, id, vid: 1, lu, del: false, json };
  const current = { _id: key, ...base, idx: extractIndex('r4', resource) };
  const history = { _id: historyKey(key, 1), rk: key, ...base };
  const provenanceId = `prov-${id}`;
  const provenanceKey = resourceKey('r4', 'bench-client', 'Provenance', provenanceId);
  const provenanceJson = JSON.stringify({
    resourceType: 'Provenance',
    id: provenanceId,
    target: [{ reference: `${type}/${id}/_history/1` }],
    recorded: lu.toISOString(),
  });
  const provenanceBase = { ...base, t: 'Provenance', id: provenanceId, json: provenanceJson };
  const provenance = {
    _id: provenanceKey,
    ...provenanceBase,
    idx: { ref: [`target|${type}/${id}`] },
  };
  const provenanceHistory = { _id: historyKey(provenanceKey, 1), rk: provenanceKey, ...provenanceBase };
  return { current, history, provenance, provenanceHistory };
}

async function run(db: Db, mode: Mode, resources: Array<Record<string, unknown>>, round: number) {
  const bundles: Array<Array<Record<string, unknown>>> = [];
  for (let i = 0; i < resources.length; i += BUNDLE) bundles.push(resources.slice(i, i + BUNDLE));
  const client = db.client;
  const start = process.hrtime.bigint();
  await inParallel(bundles.length, PARALLEL, async (b) => {
    const lu = new Date();
    const docs = bundles[b].map((resource) => docsOf(resource, round, lu));
    const current: Document[] = docs.map((d) => d.current);
    const history: Document[] = docs.flatMap((d) => [d.history, d.provenanceHistory]);
    const provenances: Document[] = docs.map((d) => d.provenance);
    if (mode === 'three writes') {
      await db.collection('resources').insertMany(current, { ordered: false });
      await Promise.all([
        db.collection('resource_history').insertMany(history, { ordered: false }),
        db.collection('resources').insertMany(provenances, { ordered: false }),
      ]);
    } else {
      const session = client.startSession();
      try {
        await session.withTransaction(async () => {
          // One session: its operations go one after the other (a session is not concurrent).
          await db.collection('resources').insertMany([...current, ...provenances], { session });
          await db.collection('resource_history').insertMany(history, { session });
        });
      } finally {
        await session.endSession();
      }
    }
  });
  const seconds = Number(process.hrtime.bigint() - start) / 1e9;
  return { seconds, perSecond: resources.length / seconds };
}

async function main(): Promise<void> {
  const server = await startBenchServer();
  try {
    // Shared Organizations and Practitioners appear in several records: keep the first of each.
    const seen = new Set<string>();
    const resources = loadSyntheaResources('r4', PATIENTS).filter((r) => {
      const key = `${String(r.resourceType)}/${String(r.id)}`;
      return !seen.has(key) && seen.add(key) !== undefined;
    });
    const source = server.connection.db!;
    const rows: Array<Record<string, string | number>> = [];
    const best: Record<Mode, number> = { 'three writes': 0, 'one transaction': 0 };
    for (let round = 0; round < ROUNDS; round++) {
      // Alternating which mode goes first, so that neither always meets a colder engine.
      const order: Mode[] =
        round % 2 === 0 ? ['three writes', 'one transaction'] : ['one transaction', 'three writes'];
      for (const mode of order) {
        const db = server.connection
          .getClient()
          .db(`${server.dbName}_${round}_${mode === 'one transaction' ? 'tx' : 'plain'}`);
        for (const name of ['resources', 'resource_history']) {
          const indexes = (await source.collection(name).listIndexes().toArray()).filter(
            (i) => i.name !== '_id_',
          );
          await db.createCollection(name);
          await db.collection(name).createIndexes(indexes.map(({ key, name: n }) => ({ key, name: n })));
        }
        const result = await run(db, mode, resources, round);
        await db.dropDatabase();
        best[mode] = Math.max(best[mode], result.perSecond);
        rows.push({
          round: round + 1,
          mode,
          resources: resources.length,
          seconds: result.seconds,
          'resources/s': result.perSecond,
          load: loadavg()[0],
        });
        process.stderr.write(`${mode} round ${round + 1}: ${result.perSecond.toFixed(0)} resources/s\n`);
      }
    }
    console.log(`\nwrite protocol — ${server.engine}, ${PARALLEL} bundles of ${BUNDLE} in flight`);
    printTable(rows);
    const ratio = best['one transaction'] / best['three writes'];
    console.log(`best transaction / best three writes: ${ratio.toFixed(2)}`);
    mkdirSync(join(__dirname, 'results'), { recursive: true });
    writeFileSync(
      join(__dirname, 'results', 'write-transactions.json'),
      `${JSON.stringify({ engine: server.engine, parallel: PARALLEL, rows, ratio }, null, 2)}\n`,
    );
  } finally {
    await server.close();
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
