/**
 * Insert cost of each index of the store on the engine: the documents the FHIR store
 * writes for Synthea R4 resources (WriteProtocol: current documents with their `idx` entries, and
 * their history rows) inserted with the driver (`insertMany`, ordered:false, batches of INDEX_COST_BATCH) into a
 * fresh collection holding only `_id`, then `_id` plus one index at a time, then every index the
 * app declares on that collection. The difference to `_id` alone is what that index costs a write.
 * Prints a table and writes bench/results/index-cost.json.
 * Run: npm run bench -- index-cost   (INDEX_COST_PATIENTS=<n>, default 5: 2,146 distinct resources;
 *   INDEX_COST_ROUNDS=<n>, default 3: each configuration's median time counts;
 *   INDEX_COST_ONLY_ALL=1: `_id` alone and all indexes, not each index alone;
 *   INDEX_COST_BATCH=<n>: documents per insert command, default 500 (a bundle step sends 20);
 *   INDEX_COST_LAYOUTS=1: `resources` in today's layout against candidate layouts, docs/storage.md
 *   "Storage design evaluated": without `_content` words, one composite multikey index, search
 *   entries as ordered keys in a side collection;
 *   INDEX_COST_INDEXES=<name,…>: of the declared indexes, only these measured alone;
 *   INDEX_COST_ALSO='[{"name":…,"key":{…},"collection"?:…}]': candidate indexes (of `resources`
 *   unless `collection` says) measured alone beside them: an index's cost before it is declared,
 *   or an earlier definition's beside today's)
 * Each run also reports the CPU the engine's processes (children of this one) used.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import type { Document, IndexDescription } from 'mongodb';
import type { mongo } from 'mongoose';
import { loadSyntheaResources } from '../test/support/synthea-data';
import { historyOf } from '../src/storage/documents';
import { WriteProtocol } from '../src/storage/write-protocol';
import type { TenantContext } from '../src/tenancy/tenant-context';
import { printTable, startBenchServer } from './lib/bench-server';
import { childrenCpuMs } from './lib/process-cpu';

const PATIENTS = Number(process.env.INDEX_COST_PATIENTS ?? 5);
/**
 * Documents per `insertMany` (INDEX_COST_BATCH, default 500). The store sends one per bundle step,
 * 20 for a 20-entry bundle; with 1 the `_id only` row is what one insert command itself costs.
 */
const BATCH = Number(process.env.INDEX_COST_BATCH ?? 500);
const ROUNDS = Number(process.env.INDEX_COST_ROUNDS ?? 3);
/** INDEX_COST_ONLY_ALL=1: `_id` alone and all indexes only (comparing engine settings). */
const ONLY_ALL = process.env.INDEX_COST_ONLY_ALL === '1';
const LAYOUTS = process.env.INDEX_COST_LAYOUTS === '1';
const ONLY_INDEXES = process.env.INDEX_COST_INDEXES?.split(',');
const ALSO = JSON.parse(process.env.INDEX_COST_ALSO ?? '[]') as Array<
  IndexDescription & { collection?: string }
>;

/** The index families of today's `idx` that a search can select on (`txt`: `_content` words). */
const SELECTIVE = ['tok', 'str', 'ref', 'uri', 'bkt'] as const;

/**
 * A resource document in the composite layout: every selective entry in one array `idx.k`, each
 * prefixed by its family (`tok:`, `str:` …; within a family the entries keep today's
 * `${param}|…` form, so a parameter's values stay one contiguous key range); `idx.ref` kept for
 * the type-less compartment index; no `_content` words.
 */
function compositeDoc(doc: Document): Document {
  const idx = (doc.idx ?? {}) as Record<string, unknown>;
  const k = SELECTIVE.flatMap((family) =>
    ((idx[family] as string[] | undefined) ?? []).map((e) => `${family}:${e}`),
  );
  const { txt: _txt, tok: _tok, str: _str, uri: _uri, bkt: _bkt, ...rest } = idx;
  return { ...doc, idx: { ...rest, k } };
}

/**
 * The ordered-key layout: the resource document without its search arrays, and one document per
 * search entry in a side collection whose `_id` is the entry itself behind the tenant and type
 * (`${v}|${c}|${u}|${t}|${family}:${param}|${value}|${resource key}`), so a parameter's values are
 * one contiguous range of the `_id` B-tree: no index but `_id`, and a range read in key order can
 * stop after a page.
 */
function keysLayout(doc: Document): { resource: Document; keys: Document[] } {
  const idx = (doc.idx ?? {}) as Record<string, unknown>;
  const prefix = [doc.v, doc.c, doc.u, doc.t].join('|');
  const keys = [...SELECTIVE, 'ref' as const].flatMap((family) =>
    ((idx[family] as string[] | undefined) ?? []).map((e) => ({
      _id: `${prefix}|${family}:${e}|${doc._id}`,
    })),
  );
  const { txt: _txt, tok: _tok, str: _str, uri: _uri, bkt: _bkt, ref: _ref, ...rest } = idx;
  return { resource: { ...doc, idx: rest }, keys: [...new Map(keys.map((k) => [k._id, k])).values()] };
}

function withoutContent(doc: Document): Document {
  const { txt: _txt, ...idx } = (doc.idx ?? {}) as Record<string, unknown>;
  return { ...doc, idx };
}

type Row = {
  collection: string;
  indexes: string;
  'entries/doc': string;
  'docs/s': number;
  'ms/1000 docs': string;
  'extra ms/1000 docs': string;
  'engine CPU ms/1000 docs': string;
};

async function main(): Promise<void> {
  // Full text on: the documents carry their `_content` words, so the layouts with and without them compare.
  const server = await startBenchServer({ FHIR_FULLTEXT: 'on' });
  try {
    const db = server.connection.db!;
    const writer = server.app.get(WriteProtocol, { strict: false });
    const ctx: TenantContext = { clientId: 'bench', userId: 1, scopes: ['user/*.*'], form: 'user-token' };
    const current = loadSyntheaResources('r4', PATIENTS).map((resource, i) =>
      writer.buildDoc(
        ctx,
        'r4',
        String(resource.resourceType),
        String(resource.id),
        1,
        new Date(i),
        resource,
      ),
    );
    const unique = [...new Map(current.map((doc) => [doc._id, doc])).values()];
    const docs: Record<string, Document[]> = {
      resources: unique,
      resource_history: unique.map((doc) => historyOf(doc)),
    };
    const target = server.connection.getClient().db(`${server.dbName}_index_cost`);
    const rows: Row[] = [];
    for (const name of LAYOUTS ? ['resources'] : ['resources', 'resource_history']) {
      const declared = (await db.collection(name).listIndexes().toArray())
        .filter((index) => index.name !== '_id_')
        .map(({ key, name: n }) => ({ key, name: n }));
      const scalar = declared.filter(
        (index) => !Object.keys(index.key).some((path) => path.startsWith('idx.')),
      );
      const tenantType = { v: 1, c: 1, t: 1 };
      const keyed = docs[name].map(keysLayout);
      const configs: Array<[string, IndexDescription[], Document[], Document[]?]> = LAYOUTS
        ? [
            ['_id only', [], docs[name]],
            [`today: all ${declared.length}`, declared, docs[name]],
            [
              `today without _content (${declared.length - 1})`,
              declared.filter((index) => !('idx.txt' in index.key)),
              docs[name].map(withoutContent),
            ],
            [
              `composite: ${scalar.length} scalar + {v,c,t,idx.k} + {v,c,idx.ref}`,
              [
                ...scalar,
                { key: { ...tenantType, 'idx.k': 1 }, name: 'search_k' },
                { key: { v: 1, c: 1, 'idx.ref': 1 }, name: 'search_ref_any_type' },
              ],
              docs[name].map(compositeDoc),
            ],
            [
              `composite only: ${scalar.length} scalar + {v,c,t,idx.k}`,
              [...scalar, { key: { ...tenantType, 'idx.k': 1 }, name: 'search_k' }],
              docs[name].map(compositeDoc),
            ],
            [
              `ordered keys: ${scalar.length} scalar + a side collection of keys (_id only)`,
              scalar,
              keyed.map((k) => k.resource),
              keyed.flatMap((k) => k.keys),
            ],
          ]
        : [
            ['_id only', [], docs[name]],
            ...(ONLY_ALL
              ? []
              : [
                  ...declared
                    .filter((index) => !ONLY_INDEXES || ONLY_INDEXES.includes(index.name))
                    .map((index) => [`+ ${index.name}`, index] as const),
                  ...ALSO.filter(({ collection }) => (collection ?? 'resources') === name).map(
                    ({ collection: _collection, ...index }) =>
                      [`+ ${index.name} (candidate)`, index] as const,
                  ),
                ].map(([label, index]): [string, IndexDescription[], Document[], Document[]?] => [
                  label,
                  [index],
                  docs[name],
                ])),
            [`all ${declared.length}`, declared, docs[name]],
          ];
      // Rounds of every configuration in turn: a busy machine slows all of them alike; the median counts.
      const times = configs.map(() => [] as number[]);
      const cpu = configs.map(() => [] as number[]);
      for (let round = 0; round < ROUNDS; round++) {
        for (const [c, [label, indexes, input, side]] of configs.entries()) {
          const cpuBefore = childrenCpuMs();
          times[c].push(await insertMs(target, `${name}_${c}`, indexes, input, side));
          cpu[c].push(childrenCpuMs() - cpuBefore);
          process.stderr.write(
            `${name} ${label} round ${round + 1}: ${times[c][round].toFixed(0)} ms, engine CPU ${cpu[c][round].toFixed(0)} ms\n`,
          );
        }
      }
      const per1000 = times.map((t) => (median(t) / docs[name].length) * 1000);
      for (const [c, [label, indexes, input, side]] of configs.entries()) {
        rows.push({
          collection: name,
          indexes: label,
          'entries/doc': side
            ? `${(side.length / input.length).toFixed(1)} keys`
            : indexes.length === 1
              ? entriesPerDoc(input, indexes[0])
              : totalEntries(input),
          'docs/s': Math.round(1e6 / per1000[c]),
          'ms/1000 docs': per1000[c].toFixed(0),
          'extra ms/1000 docs': c === 0 ? '' : (per1000[c] - per1000[0]).toFixed(0),
          'engine CPU ms/1000 docs': ((median(cpu[c]) / input.length) * 1000).toFixed(0),
        });
      }
    }
    const probe = LAYOUTS ? await pageProbe(target, db, docs.resources) : undefined;
    await target.dropDatabase();
    const load = loadavg().map((l) => l.toFixed(1));
    console.log(
      `\nindex insert cost — ${server.engine}, ${unique.length} documents per run in inserts of ${BATCH}, load average ${load.join(' ')}`,
    );
    printTable(rows);
    if (probe) {
      console.log(
        `\nfirst page of 20 by one token (${probe.entry}, ${probe.matches} matches), median of ${PROBE_RUNS}:`,
      );
      printTable(probe.rows);
    }
    mkdirSync(join(__dirname, 'results'), { recursive: true });
    writeFileSync(
      join(__dirname, 'results', LAYOUTS ? 'index-layouts.json' : 'index-cost.json'),
      JSON.stringify(
        {
          engine: server.engine,
          documents: unique.length,
          loadAverage: loadavg(),
          rows,
          probe,
          summary: rows
            .filter((row) => row.indexes === '_id only' || row.indexes.startsWith('all'))
            .map((row) => ({
              figure: `${row.collection}, ${row.indexes}`,
              value: row['docs/s'],
              unit: 'docs/s',
            })),
        },
        null,
        2,
      ),
    );
  } finally {
    await server.close();
  }
}

/** Milliseconds to insert `docs` into a new collection with `indexes` (dropped afterwards). */
async function insertMs(
  target: mongo.Db,
  name: string,
  indexes: IndexDescription[],
  docs: Document[],
  sideKeys?: Document[],
): Promise<number> {
  const collection = target.collection(name);
  await target.createCollection(name);
  if (indexes.length > 0) await collection.createIndexes(indexes);
  const side = sideKeys ? target.collection(`${name}_keys`) : undefined;
  if (side) await target.createCollection(side.collectionName);
  // a resource's keys go with it: the same batch of resources, then their keys
  // the last part of a key and of a resource's `_id` is the resource's id
  const idOf = (doc: Document) => String(doc._id).split('|').pop()!;
  const keysOf = new Map<string, Document[]>();
  for (const key of sideKeys ?? []) keysOf.set(idOf(key), [...(keysOf.get(idOf(key)) ?? []), key]);
  const started = process.hrtime.bigint();
  // copies: insertMany sets `_id` on what it is given
  for (let i = 0; i < docs.length; i += BATCH) {
    const batch = docs.slice(i, i + BATCH);
    await collection.insertMany(
      batch.map((doc) => ({ ...doc })),
      { ordered: false },
    );
    const keys = side ? batch.flatMap((doc) => keysOf.get(idOf(doc)) ?? []) : [];
    if (side && keys.length > 0)
      await side.insertMany(
        keys.map((key) => ({ ...key })),
        { ordered: false },
      );
  }
  const ms = Number(process.hrtime.bigint() - started) / 1e6;
  await collection.drop();
  await side?.drop();
  return ms;
}

const PROBE_RUNS = 31;
/** Copies of the sample the page probe stores (new ids, same user): more matches per token. */
const PROBE_COPIES = Number(process.env.INDEX_COST_PROBE_COPIES ?? 20);

/**
 * A first page of 20 Observations by their most frequent token, over `PROBE_COPIES` copies of the
 * sample, in today's layout (the `idx.tok`
 * index, sorted by lastUpdated as a search is) and in the ordered-key layout (a range of the side
 * collection's `_id` read in key order, then the 20 resources by key): milliseconds per page.
 */
async function pageProbe(target: mongo.Db, db: mongo.Db, sample: Document[]) {
  const docs = Array.from({ length: PROBE_COPIES }, (_, copy) =>
    sample.map((doc): Document => ({ ...doc, _id: `${doc._id}-${copy}` })),
  ).flat();
  const declared = (await db.collection('resources').listIndexes().toArray())
    .filter((index) => index.name !== '_id_')
    .map(({ key, name }) => ({ key, name }));
  const scalar = declared.filter((index) => !Object.keys(index.key).some((path) => path.startsWith('idx.')));
  const today = target.collection('probe_today');
  const resources = target.collection('probe_resources');
  const keys = target.collection('probe_keys');
  await today.createIndexes(declared);
  await resources.createIndexes(scalar);
  const keyed = docs.map(keysLayout);
  for (let i = 0; i < docs.length; i += BATCH) {
    await today.insertMany(
      docs.slice(i, i + BATCH).map((doc) => ({ ...doc })),
      { ordered: false },
    );
    await resources.insertMany(
      keyed.slice(i, i + BATCH).map((k) => ({ ...k.resource })),
      { ordered: false },
    );
    await keys.insertMany(
      keyed.slice(i, i + BATCH).flatMap((k) => k.keys.map((key) => ({ ...key }))),
      { ordered: false },
    );
  }
  const counts = new Map<string, number>();
  for (const doc of docs.filter((d) => d.t === 'Observation'))
    for (const entry of ((doc.idx as Record<string, string[]>).tok ?? []).filter((e) =>
      e.startsWith('code|'),
    ))
      counts.set(entry, (counts.get(entry) ?? 0) + 1);
  const [entry, matches] = [...counts].sort((a, b) => b[1] - a[1])[0];
  const first = docs.find((d) => d.t === 'Observation')!;
  const prefix = `${[first.v, first.c, first.u, first.t].join('|')}|tok:${entry}|`;
  const ways: Array<[string, () => Promise<number>]> = [
    [
      'today: idx.tok index, sort by lastUpdated, limit 20',
      async () =>
        (
          await today
            .find({ v: first.v, c: first.c, u: first.u, t: 'Observation', 'idx.tok': entry })
            .sort({ lu: -1 })
            .limit(20)
            .toArray()
        ).length,
    ],
    [
      'ordered keys: _id range in key order, limit 20, then the 20 resources by key',
      async () => {
        const page = await keys
          .find({ _id: { $gte: prefix, $lt: `${prefix}\uffff` } as never })
          .limit(20)
          .toArray();
        const resourceKeys = page.map((key) => String(key._id).slice(prefix.length));
        return (await resources.find({ _id: { $in: resourceKeys } as never }).toArray()).length;
      },
    ],
  ];
  const times = ways.map(() => [] as number[]);
  for (let run = 0; run < PROBE_RUNS; run++)
    for (const [w, [, page]] of ways.entries()) {
      const started = process.hrtime.bigint();
      if ((await page()) !== Math.min(20, matches))
        throw new Error(`probe: ${ways[w][0]} did not give a full page`);
      times[w].push(Number(process.hrtime.bigint() - started) / 1e6);
    }
  return {
    entry,
    matches,
    documents: docs.length,
    rows: ways.map(([way], w) => ({ way, 'ms per page': median(times[w]).toFixed(1) })),
  };
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)];
}

/** Mean number of `idx` array entries per document (all families). */
function totalEntries(docs: Document[]): string {
  const total = docs.reduce(
    (sum, doc) =>
      sum +
      Object.values((doc.idx ?? {}) as Record<string, unknown>).reduce<number>(
        (n, value) => n + (Array.isArray(value) ? value.length : 0),
        0,
      ),
    0,
  );
  return (total / docs.length).toFixed(1);
}

/** Mean number of index entries a document adds to a one-array index (its array's length). */
function entriesPerDoc(docs: Document[], index: IndexDescription): string {
  const arrayPath = Object.keys(index.key as Record<string, number>).find((path) => path.startsWith('idx.'));
  if (!arrayPath) return '1';
  const field = arrayPath.slice('idx.'.length);
  const total = docs.reduce(
    (sum, doc) => sum + ((doc.idx as Record<string, unknown[]>)?.[field]?.length ?? 0),
    0,
  );
  return (total / docs.length).toFixed(1);
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
