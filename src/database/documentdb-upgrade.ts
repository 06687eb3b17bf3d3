import { existsSync, readFileSync, renameSync, rmSync, writeFileSync } from 'fs';
import { join } from 'path';
import { MongoClient, MongoServerError } from 'mongodb';

/**
 * Upgrades in place a data folder made by the DocumentDB 0.108 kit to the kit with the extended
 * RUM (docs/storage.md "Engines": the kit README's steps), at the start of the new engine:
 * 1. `extensions`: `ALTER EXTENSION … UPDATE` of documentdb_core, documentdb, vector and pg_cron
 *    (the new binaries start on the old catalog, but e.g. counts fail until it is updated);
 * 2. `settings`: the extended-RUM settings into postgresql.conf, a restart of PostgreSQL, then
 *    `CREATE EXTENSION documentdb_extended_rum`;
 * 3. `indexes`: every index but `_id` dropped and created again with the same definition, one
 *    collection at a time (the old ones keep answering through the new code, but only indexes built
 *    by the extended RUM are walked in sort order; REINDEX keeps an index's access method).
 * Progress lives in `engine-upgrade.json` in the folder, written before each step's work and after
 * each collection: a start cut off anywhere (a kill, a power cut) finds it and finishes the job;
 * every step is idempotent, and a collection whose drop-and-create was interrupted is done again
 * from the definitions recorded before its drop.
 */

export const UPGRADE_FILE = 'engine-upgrade.json';

const EXTENSIONS = ['documentdb_core', 'documentdb', 'vector', 'pg_cron'];

interface IndexSpec {
  name: string;
  key: Record<string, unknown>;
  [option: string]: unknown;
}

interface CollectionRebuild {
  db: string;
  collection: string;
  /** Recorded before the drop: what the collection's indexes (but `_id`) are. */
  indexes?: IndexSpec[];
  done: boolean;
}

export interface UpgradeState {
  from: string;
  startedAt: string;
  step: 'extensions' | 'settings' | 'indexes';
  /** Listed once when the index step begins, so a resumed run rebuilds the same collections. */
  collections?: CollectionRebuild[];
}

/** What the upgrade needs of the instance being started. */
export interface UpgradeTarget {
  root: string;
  confFile: string;
  sql(statement: string): Promise<string>;
  restartPostgres(): Promise<void>;
  report(message: string): void;
}

export function readUpgradeState(root: string): UpgradeState | undefined {
  const file = join(root, UPGRADE_FILE);
  return existsSync(file) ? (JSON.parse(readFileSync(file, 'utf8')) as UpgradeState) : undefined;
}

function save(root: string, state: UpgradeState): void {
  // whole or not at all: a kill mid-write leaves the previous state
  const file = join(root, UPGRADE_FILE);
  writeFileSync(`${file}.tmp`, JSON.stringify(state, null, 2) + '\n');
  renameSync(`${file}.tmp`, file);
}

/**
 * Steps 1 and 2 (PostgreSQL running, gateway not yet): from a state found in the folder, or a new
 * one when `needed` (the cluster lacks the extended RUM the binaries have). Returns the state for
 * the index step, or undefined when there is nothing to do.
 */
export async function upgradeCatalog(
  t: UpgradeTarget,
  needed: boolean,
  settings: string[],
): Promise<UpgradeState | undefined> {
  let state = readUpgradeState(t.root);
  if (!state && !needed) return undefined;
  if (!state) {
    const from = (await t.sql("SELECT extversion FROM pg_extension WHERE extname = 'documentdb'")).trim();
    state = { from, startedAt: new Date().toISOString(), step: 'extensions' };
    save(t.root, state);
    t.report(`upgrading this data folder from DocumentDB ${from} to the extended-RUM engine (3 steps)`);
  } else {
    t.report(`resuming the engine upgrade begun ${state.startedAt} at its step "${state.step}"`);
  }
  if (state.step === 'extensions') {
    for (const [i, name] of EXTENSIONS.entries()) {
      const before = (await t.sql(`SELECT extversion FROM pg_extension WHERE extname = '${name}'`)).trim();
      if (!before) continue;
      await t.sql(`ALTER EXTENSION ${name} UPDATE`);
      const after = (await t.sql(`SELECT extversion FROM pg_extension WHERE extname = '${name}'`)).trim();
      t.report(`upgrade step 1/3 (extensions) ${i + 1}/${EXTENSIONS.length}: ${name} ${before} -> ${after}`);
    }
    state = { ...state, step: 'settings' };
    save(t.root, state);
  }
  if (state.step === 'settings') {
    writeSettings(t.confFile, settings);
    t.report(
      'upgrade step 2/3 (settings): extended RUM settings written to postgresql.conf; restarting PostgreSQL',
    );
    await t.restartPostgres();
    await t.sql('CREATE EXTENSION IF NOT EXISTS documentdb_extended_rum');
    t.report('upgrade step 2/3 (settings): documentdb_extended_rum created');
    state = { ...state, step: 'indexes' };
    save(t.root, state);
  }
  return state;
}

/** The settings in place of the cluster's `shared_preload_libraries` line (idempotent). */
export function withSettings(conf: string, settings: string[]): string {
  const kept = conf
    .replace(/\n+$/, '')
    .split('\n')
    .filter((line) => !settings.some((setting) => line.startsWith(setting.split('=')[0])));
  return [...kept, ...settings].join('\n') + '\n';
}

function writeSettings(confFile: string, settings: string[]): void {
  const conf = readFileSync(confFile, 'utf8');
  writeFileSync(`${confFile}.tmp`, withSettings(conf, settings));
  renameSync(`${confFile}.tmp`, confFile);
}

/** Step 3 (the gateway up): each collection's indexes dropped and created again; then the state goes. */
export async function rebuildIndexes(t: UpgradeTarget, uri: string, state: UpgradeState): Promise<void> {
  const client = new MongoClient(uri, { maxPoolSize: 2 });
  try {
    if (!state.collections) {
      state.collections = await listCollections(client);
      save(t.root, state);
    }
    const all = state.collections;
    const started = Date.now();
    for (const [i, entry] of all.entries()) {
      if (entry.done) continue;
      const collection = client.db(entry.db).collection(entry.collection);
      if (!entry.indexes) {
        entry.indexes = (await collection.listIndexes().toArray())
          .filter((index) => index.name !== '_id_')
          .map(({ v: _v, ns: _ns, ...spec }) => spec as IndexSpec);
        save(t.root, state);
      }
      for (const index of entry.indexes) {
        await collection.dropIndex(index.name).catch((e: unknown) => {
          if (!(e instanceof MongoServerError && e.codeName === 'IndexNotFound')) throw e;
        });
      }
      if (entry.indexes.length > 0) {
        await client.db(entry.db).command({ createIndexes: entry.collection, indexes: entry.indexes });
      }
      entry.done = true;
      save(t.root, state);
      const rows = await collection.estimatedDocumentCount();
      t.report(
        `upgrade step 3/3 (indexes) ${i + 1}/${all.length}: ${entry.db}.${entry.collection} ` +
          `(${entry.indexes.length} indexes, ~${rows} documents) after ${Math.round((Date.now() - started) / 1000)} s`,
      );
    }
  } finally {
    await client.close();
  }
  rmSync(join(t.root, UPGRADE_FILE), { force: true });
  t.report(`engine upgrade from DocumentDB ${state.from} finished`);
}

async function listCollections(client: MongoClient): Promise<CollectionRebuild[]> {
  const { databases } = await client.db('admin').admin().listDatabases({ nameOnly: true });
  const found: CollectionRebuild[] = [];
  for (const { name: db } of databases) {
    if (db === 'admin' || db === 'config' || db === 'local') continue;
    const collections = await client.db(db).listCollections({}, { nameOnly: true }).toArray();
    for (const { name } of collections) {
      if (!name.startsWith('system.')) found.push({ db, collection: name, done: false });
    }
  }
  return found;
}
