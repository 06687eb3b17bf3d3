/**
 * Directory search latency: ENTRIES generated entries (default 100,000), then
 * `POST /api/search` with 8 connections for one-word, two-word and city queries (p50/p99), and
 * the same filters through the raw driver, sequentially, for the app/driver ratio.
 * Starts its own embedded database (like test/global-setup.ts) unless MONGO_URL is set.
 * Prints a table and writes bench/results/directory.json.
 * Run: npx ts-node --transpile-only -r tsconfig-paths/register bench/directory.ts
 * The searches are answered by the real server in its own process (as operators run it), on the
 * database this process loaded; each scenario starts after a warm-up.
 *   env: ENTRIES (100000), REQUESTS per scenario (2000), CONNECTIONS (8)
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import autocannon from 'autocannon';
import { getConnectionToken } from '@nestjs/mongoose';
import type { Connection } from 'mongoose';
import { parseSettings } from '../src/config/settings';
import { createApp } from '../src/create-app';
import { resolveDatabase } from '../src/database/embedded-database';
import {
  DirectoryEntryInput,
  MAX_PREFIX_LENGTH,
  parseQueryWords,
  SystemType,
} from '../src/modules/directory/directory-entry';
import { storedForm } from '../src/modules/directory/directory.repository';
import { engineLabel, serveInOwnProcess } from './lib/bench-server';
import { createBenchUser } from './lib/bench-user';
import { percentile } from './lib/percentile';
import { DirectoryService } from '../src/modules/directory/directory.service';
import { DirectoryRepository } from '../src/modules/directory/directory.repository';
import type { INestApplication } from '@nestjs/common';

const ENTRIES = Number(process.env.ENTRIES ?? 100_000);
const REQUESTS = Number(process.env.REQUESTS ?? 2000);
const CONNECTIONS = Number(process.env.CONNECTIONS ?? 8);
const RAW_SAMPLES = Math.max(10, Math.min(50, REQUESTS / 4));

const SAINTS = ['Saint', 'St.', 'Mercy', 'Good Samaritan', 'Holy Family', 'Sacred Heart', 'Beth Israel'];
const PLACES = [
  'Valley',
  'Riverside',
  'Lakeview',
  'Northshore',
  'Hillcrest',
  'Bayview',
  'Pinecrest',
  'Harbor',
];
const PEOPLE = [
  'Mary',
  'Joseph',
  'Elizabeth',
  'Luke',
  'Anne',
  'Vincent',
  'Francis',
  'Margaret',
  'Ólafur',
  'José',
];
const KINDS = ['Hospital', 'Medical Center', 'Clinic', 'Health', 'Community Health Center', 'Urgent Care'];
const STREETS = ['Main', 'Elm', 'Oak', 'Washington', 'Maple', 'Park', 'Highland', 'Chestnut', 'Pleasant'];
const SUFFIXES = ['St', 'Ave', 'Rd', 'Blvd', 'Way'];
const CITIES = [
  'Boston',
  'Worcester',
  'Springfield',
  'Lowell',
  'Cambridge',
  'New Bedford',
  'Brockton',
  'Quincy',
  'Lynn',
  'Fall River',
  'Newton',
  'Somerville',
  'Lawrence',
  'Framingham',
  'Haverhill',
  'Waltham',
  'Malden',
  'Brookline',
  'Plymouth',
  'Medford',
];
const PAYERS = ['Aetna', 'Humana', 'Cigna Health', 'Medicare', 'Medicaid', 'Anthem', 'UnitedHealthcare'];

/** Deterministic generator (mulberry32), so every run searches the same corpus. */
function random(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function generate(count: number): DirectoryEntryInput[] {
  const rnd = random(8);
  const pick = <T>(list: readonly T[]) => list[Math.floor(rnd() * list.length)];
  return Array.from({ length: count }, (_v, i) => {
    const r = rnd();
    const systemType: SystemType = r < 0.9 ? 'HealthSystem' : r < 0.95 ? 'Payer2Payer' : 'PayerPatientAccess';
    const name =
      systemType === 'HealthSystem'
        ? rnd() < 0.5
          ? `${pick(SAINTS)} ${pick(PEOPLE)} ${pick(KINDS)}`
          : `${pick(PLACES)} ${pick(KINDS)} ${Math.floor(rnd() * 900) + 100}`
        : `${pick(PAYERS)} ${pick(PLACES)} Plan ${i}`;
    return {
      id: `bench-${i}`,
      name,
      system_type: systemType,
      address: {
        line: [`${Math.floor(rnd() * 999) + 1} ${pick(STREETS)} ${pick(SUFFIXES)}`],
        city: pick(CITIES),
        state: 'MA',
        postalCode: String(1000 + Math.floor(rnd() * 1700)).padStart(5, '0'),
      },
      ehr: pick(['Epic', 'Cerner', 'Meditech', 'athenahealth']),
      fhir_base_url: `https://fhir.example.org/${i}/r4`,
      logo: null,
      status: rnd() < 0.97 ? 'active' : 'inactive',
    };
  });
}

const SCENARIOS: { name: string; queries: Record<string, string>[] }[] = [
  { name: 'one word', queries: ['medical', 'valley', 'mary', 'clin', 'hosp'].map((query) => ({ query })) },
  {
    name: 'two words',
    queries: ['valley medical', 'saint mary', 'jose hosp', 'harbor clinic', 'mercy health'].map((query) => ({
      query,
    })),
  },
  {
    name: 'city',
    queries: ['worcester', 'springfield', 'new bedford', 'boston', 'lowell'].map((query) => ({ query })),
  },
  {
    name: 'one word + system_type, page 3',
    queries: ['health', 'plan', 'medicare'].map((query) => ({
      query,
      system_type: 'Payer2Payer',
      offset: '40',
    })),
  },
];

interface Row {
  scenario: string;
  requests: number;
  errors: number;
  p50: number;
  p99: number;
  rps: number;
  rawP50: number;
  ratio: number;
}

/** The filters the repository builds, run through the raw driver (count + page), for the ratio. */
async function rawMedianMs(connection: Connection, queries: Record<string, string>[]): Promise<number> {
  const collection = connection.db!.collection('directory_entries');
  const times: number[] = [];
  for (let i = 0; i < RAW_SAMPLES; i++) {
    const q = queries[i % queries.length];
    const words = parseQueryWords(q.query).words.map((w) => w.slice(0, MAX_PREFIX_LENGTH));
    const filter: Record<string, unknown> = { status: 'active' };
    if (q.system_type) filter.system_type = q.system_type;
    if (words.length > 0) filter.prefixes = words.length === 1 ? words[0] : { $all: words };
    const start = performance.now();
    await Promise.all([
      collection.countDocuments(filter),
      collection
        .find(filter)
        .sort({ sort_name: 1, _id: 1 })
        .skip(Number(q.offset ?? 0))
        .limit(20)
        .toArray(),
    ]);
    times.push(performance.now() - start);
  }
  times.sort((a, b) => a - b);
  return percentile(times, 50);
}

function repositoryOf(app: INestApplication): DirectoryRepository {
  return app.get(DirectoryRepository, { strict: false });
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'bench-directory-'));
  const database = await resolveDatabase(process.env.MONGO_URL, join(dir, 'db'));
  const settings = parseSettings({ LOG_LEVEL: 'silent', DATA_DIR: dir, DIRECTORY_SEED: 'false', PORT: '0' });
  const dbName = `bench_directory_${Date.now()}`;
  const app = await createApp(settings, database, dbName);
  await app.init(); // loads and issues the token; the HTTP server measured is the child below
  const connection = app.get<Connection>(getConnectionToken());
  const engine = await engineLabel(connection, database);
  const rows: Row[] = [];
  try {
    const loadStart = performance.now();
    const entries = generate(ENTRIES);
    // The first 1,000 go through the import path (upsert by id); the rest are inserted in bulk
    // with the same derived fields, so that loading is not what the benchmark waits for.
    const summary = await app
      .get(DirectoryService)
      .importRecords(entries.slice(0, 1000).map((record, i) => ({ line: i + 1, record })));
    const collection = connection.db!.collection('directory_entries');
    // four batches in flight: the engine's index maintenance, not one connection's round trips, is the limit
    let nextBatch = 1000;
    await Promise.all(
      Array.from({ length: 4 }, async () => {
        while (nextBatch < entries.length) {
          const from = nextBatch;
          nextBatch += 1000;
          await collection.insertMany(
            entries.slice(from, from + 1000).map((e) => storedForm(e, new Date())) as any[],
            // seeding is not what is measured: no per-request deadline (DB_TIMEOUT_MS) on a bulk load
            { ordered: false, timeoutMS: 0 },
          );
        }
      }),
    );
    const loadSeconds = (performance.now() - loadStart) / 1000;
    process.stderr.write(
      `loaded ${summary.inserted + Math.max(0, entries.length - 1000)} entries in ${loadSeconds.toFixed(1)} s (${engine})\n`,
    );
    const stats = await connection.db!.command({ collStats: 'directory_entries' });
    // Searches run over the in-memory copy once it is at the current version (the first search after
    // a write runs in the database and starts the rebuild): build it before measuring, and say its cost.
    global.gc?.();
    const heapBefore = process.memoryUsage().heapUsed;
    const copyStart = performance.now();
    await app.get(DirectoryService).warmSearchCopy();
    const copySeconds = (performance.now() - copyStart) / 1000;
    global.gc?.();
    const copyHeapMb = (process.memoryUsage().heapUsed - heapBefore) / 1048576;
    process.stderr.write(
      `in-memory copy built in ${copySeconds.toFixed(1)} s, heap +${copyHeapMb.toFixed(0)} MB\n`,
    );

    const { user } = await createBenchUser(app, { programs: [] });
    const headers = { authorization: `Bearer ${user.access_token}` };

    const copyInUse = (await repositoryOf(app).searchInMemory({ words: ['health'] }, 0, 1)) !== null;
    process.stderr.write(`searches served from the in-memory copy: ${copyInUse ? 'yes' : 'NO (database)'}\n`);
    // The server that answers runs in its own process: its first search finds no copy, answers from
    // the database and starts building one; wait until searches are answered from it.
    const own = await serveInOwnProcess({ database, dbName, settings });
    const url = own.url;
    try {
      const copyReadyBy = Date.now() + 120_000;
      let fast = 0;
      while (fast < 3 && Date.now() < copyReadyBy) {
        const start = performance.now();
        const res = await fetch(`${url}/api/search?query=health`, { method: 'POST', headers });
        await res.arrayBuffer();
        fast = performance.now() - start < 10 ? fast + 1 : 0;
        await new Promise((r) => setTimeout(r, 200));
      }
      for (const scenario of SCENARIOS) {
        let n = 0;
        const run = (amount: number) =>
          autocannon({
            url,
            connections: CONNECTIONS,
            amount,
            timeout: 60,
            requests: [
              {
                method: 'POST',
                headers,
                setupRequest: (req: any) => ({
                  ...req,
                  path: `/api/search?${new URLSearchParams(scenario.queries[n++ % scenario.queries.length])}`,
                }),
              },
            ],
          });
        await run(Math.min(500, REQUESTS)); // warm-up, not counted
        const result = await run(REQUESTS);
        const rawP50 = await rawMedianMs(connection, scenario.queries);
        rows.push({
          scenario: scenario.name,
          requests: result.requests.total,
          errors: result.errors + result.timeouts + (result.non2xx ?? 0),
          p50: result.latency.p50,
          p99: result.latency.p99,
          rps: result.requests.average,
          rawP50,
          ratio: result.latency.p50 / Math.max(rawP50, 0.001),
        });
      }
    } finally {
      await own.stop();
    }

    console.table(
      rows.map((r) => ({
        scenario: r.scenario,
        requests: r.requests,
        errors: r.errors,
        'p50 ms': r.p50,
        'p99 ms': r.p99,
        'req/s': Math.round(r.rps),
        'database query p50 ms (raw driver, 1 conn)': Number(r.rawP50.toFixed(1)),
      })),
    );
    console.log(
      `${engine}; ${ENTRIES} entries loaded in ${loadSeconds.toFixed(1)} s; collection ${(stats.size / 1e6).toFixed(1)} MB, ` +
        `indexes ${((stats.totalIndexSize ?? 0) / 1e6).toFixed(1)} MB; ${CONNECTIONS} connections; ` +
        `in-memory copy built in ${copySeconds.toFixed(1)} s, heap +${copyHeapMb.toFixed(0)} MB`,
    );
    mkdirSync(join(__dirname, 'results'), { recursive: true });
    writeFileSync(
      join(__dirname, 'results', 'directory.json'),
      JSON.stringify(
        {
          engine,
          entries: ENTRIES,
          connections: CONNECTIONS,
          loadSeconds,
          copySeconds,
          copyHeapMb,
          collectionBytes: stats.size,
          indexBytes: stats.totalIndexSize ?? null,
          rows,
          summary: rows.flatMap((r) => [
            { figure: `${r.scenario} p50`, value: r.p50, unit: 'ms' },
            { figure: `${r.scenario} p99`, value: r.p99, unit: 'ms', target: '< 20 ms' },
          ]),
        },
        null,
        2,
      ),
    );
  } finally {
    await app.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
