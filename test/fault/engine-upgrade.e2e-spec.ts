import { spawn } from 'child_process';
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync } from 'fs';
import { tmpdir } from 'os';
import { join } from 'path';
import { MongoClient } from 'mongodb';
import { createTestApp } from '@app/testing';
import { documentDbPaths, startDocumentDb } from '../../src/database/documentdb-process';
import { UPGRADE_FILE } from '../../src/database/documentdb-upgrade';
import { seedHotPaths } from '../query-plans.catalogue';
import { parseEngineSettings } from '../../src/config/settings';

interface Snapshot {
  counts: Record<string, number>;
  indexes: Record<string, string[]>;
}

/**
 * Each collection's document count and index definitions (name, key, unique, TTL). Documents a TTL
 * index may remove before `liveUntil` are not counted: the engine's TTL task deletes them between
 * the two snapshots (throttle windows, sessions), which is not the upgrade losing them.
 */
async function snapshot(uri: string, liveUntil: number): Promise<Snapshot> {
  const client = new MongoClient(uri);
  try {
    const db = client.db('fhir');
    const counts: Record<string, number> = {};
    const indexes: Record<string, string[]> = {};
    for (const { name } of await db.listCollections({}, { nameOnly: true }).toArray()) {
      const defined = await db.collection(name).listIndexes().toArray();
      const lasting = defined
        .filter((i) => typeof i.expireAfterSeconds === 'number')
        .map((i) => {
          const field = Object.keys(i.key)[0];
          const expiresBefore = new Date(liveUntil - (i.expireAfterSeconds as number) * 1000);
          return { $or: [{ [field]: { $not: { $type: 'date' } } }, { [field]: { $gt: expiresBefore } }] };
        });
      counts[name] = await db.collection(name).countDocuments(lasting.length > 0 ? { $and: lasting } : {});
      indexes[name] = defined
        .map((i) => JSON.stringify([i.name, i.key, i.unique ?? false, i.expireAfterSeconds ?? null]))
        .sort();
    }
    return { counts, indexes };
  } finally {
    await client.close();
  }
}

const upgradeState = (dir: string) => JSON.parse(readFileSync(join(dir, UPGRADE_FILE), 'utf8'));

/** A start of the new kit in a process of its own that kills itself after a report line matching `crashAfter`. */
async function crashedStart(dir: string, crashAfter: string): Promise<string> {
  const child = spawn(
    process.execPath,
    ['-r', 'ts-node/register/transpile-only', join(__dirname, 'engine-upgrade-child.ts'), dir, crashAfter],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let out = '';
  child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (out += chunk.toString()));
  const signal = await new Promise((resolve) => child.on('exit', (_code, sig) => resolve(sig)));
  expect({ signal, out }).toMatchObject({ signal: 'SIGKILL' });
  return out;
}

/**
 * A data folder written by the DocumentDB 0.108 kit (the app's data in every collection) is
 * upgraded in place when the new kit starts on it: a start killed in the middle of the index step
 * leaves its progress in the folder, and the next start finishes the job. Afterwards every document
 * and index definition is there, counts work (they fail on a catalog not updated), no index is left
 * on the stock RUM, and a sorted page reads the index in order.
 */
describe('engine upgrade of a 0.108 data folder (fault)', () => {
  jest.setTimeout(600_000);
  const dir = mkdtempSync(join(tmpdir(), 'fhir-engine-upgrade-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('upgrades in place, survives a kill part way, and keeps every document and index', async () => {
    chmodSync(dir, 0o755);
    // past the test's own time-out: documents a TTL index removes before then are left out of the counts
    const liveUntil = Date.now() + 15 * 60_000;
    const old = await startDocumentDb(documentDbPaths(parseEngineSettings({ DOCUMENTDB_KIT: '0.108' })), dir);
    let before: Snapshot;
    const testUrl = process.env.TEST_MONGO_URL;
    try {
      expect(old.version).toMatch(/^DocumentDB 0\.108/);
      process.env.TEST_MONGO_URL = old.uri;
      const t = await createTestApp({ DIRECTORY_SEED: 'false' }, { attachTo: 'fhir' });
      try {
        await seedHotPaths(t);
      } finally {
        await t.close();
      }
      const client = new MongoClient(old.uri);
      try {
        // a document in every collection the app made, also those the seed left empty
        const db = client.db('fhir');
        for (const { name } of await db.listCollections({}, { nameOnly: true }).toArray()) {
          if ((await db.collection(name).countDocuments({})) === 0)
            await db.collection(name).insertOne({ probe: 1 });
        }
      } finally {
        await client.close();
      }
      before = await snapshot(old.uri, liveUntil);
    } finally {
      process.env.TEST_MONGO_URL = testUrl;
      await old.stop();
    }
    expect(Object.keys(before.counts).length).toBeGreaterThan(10);

    // two starts on the new kit are killed: after its settings are written, then after two
    // collections' indexes are rebuilt; each time the folder keeps where the upgrade stands
    const first = await crashedStart(dir, 'restarting PostgreSQL');
    expect(first).toMatch(/upgrade step 1\/3 \(extensions\) 2\/4: documentdb 0\.108-0 -> 0\.11\d-\d/);
    expect(upgradeState(dir)).toMatchObject({ from: '0.108-0', step: 'settings' });
    const second = await crashedStart(dir, 'upgrade step 3/3 \\(indexes\\) 2/');
    expect(second).toMatch(/resuming the engine upgrade .* at its step "settings"/);
    expect(second).toMatch(/upgrade step 2\/3 \(settings\): documentdb_extended_rum created/);
    expect(upgradeState(dir)).toMatchObject({ from: '0.108-0', step: 'indexes' });
    expect(upgradeState(dir).collections.filter((c: { done: boolean }) => c.done)).toHaveLength(2);

    const lines: string[] = [];
    const db = await startDocumentDb(
      documentDbPaths(parseEngineSettings({ DOCUMENTDB_KIT: 'next' })),
      dir,
      undefined,
      (line) => lines.push(line),
    );
    try {
      expect(lines.join('\n')).toMatch(/resuming the engine upgrade .* at its step "indexes"/);
      expect(lines.join('\n')).toMatch(/engine upgrade from DocumentDB 0\.108-0 finished/);
      expect(existsSync(join(dir, UPGRADE_FILE))).toBe(false);
      expect(db.version).toMatch(/^DocumentDB 0\.11\d-\d \(extended RUM\)/);
      expect(await snapshot(db.uri, liveUntil)).toEqual(before);
      // every index but the primary keys is built by the extended RUM
      const stock = await db.adminSql(
        "SELECT count(*) FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_am a ON a.oid = c.relam JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = 'documentdb_data' AND a.amname <> 'btree' AND a.amname <> 'documentdb_extended_rum'",
      );
      expect(Number(stock.trim())).toBe(0);
      await db.adminSql('ANALYZE');
      const client = new MongoClient(db.uri);
      try {
        const resources = client.db('fhir').collection('resources');
        const one = await resources.findOne({ t: 'Observation' });
        const plan = await resources
          .find({ v: one!.v, c: one!.c, t: 'Observation' })
          .sort({ lu: -1 })
          .limit(5)
          .hint('type_lastUpdated')
          .explain('executionStats');
        expect(JSON.stringify(plan.executionStats)).not.toContain('"SORT"');
      } finally {
        await client.close();
      }
    } finally {
      await db.stop();
    }
  });
});
