/**
 * Purge throughput: Synthea R4 loaded for one user with two versions of every resource,
 * then `DELETE /r4/purge` with a 2 s budget, repeated until it answers 200. Reports resources
 * (with their history) removed per second and the number of rounds. Prints a table and writes
 * bench/results/purge.json. Starts its own app and database (MONGO_URL, else as the tests do).
 * Run: npm run bench -- purge
 *   PURGE_BENCH_PATIENTS=<n>  only the first n patient records (default all 100: 38,971 resources)
 *   PURGE_BENCH_LOAD=http     load through POST /r4 bundles (default `direct`: the documents the
 *                             store's own WriteProtocol builds — index entries, Provenance per
 *                             version, history rows — inserted in bulk, because loading 78,000
 *                             versions over HTTP is the ingest benchmark's job; purge is what is measured)
 * The raw driver then does the same work on a fresh load of the same documents: one tenant-scoped
 * `deleteMany` on each collection, with no budget, batches or bookkeeping (the ceiling).
 */
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { getConnectionToken } from '@nestjs/mongoose';
import type { CommandFailedEvent, CommandStartedEvent, CommandSucceededEvent } from 'mongodb';
import type { Connection } from 'mongoose';
import type { INestApplication } from '@nestjs/common';
import { loadSyntheaResources } from '../test/support/synthea-data';
import { parseSettings } from '../src/config/settings';
import { createApp } from '../src/create-app';
import { resolveDatabase } from '../src/database/embedded-database';
import { ClientsService } from '../src/modules/auth/clients/clients.service';
import { historyOf, type HistoryDoc, type ResourceDoc } from '../src/storage/documents';
import { WriteProtocol } from '../src/storage/write-protocol';
import type { TenantContext } from '../src/tenancy/tenant-context';
import { engineLabel } from './lib/bench-server';
import { call, loadInBundles } from './lib/fhir-load';

const BUDGET_MS = 2000;
const INSERT_CHUNK = 1000;
const TARGET_PER_SECOND = 10_000;

interface Round {
  round: number;
  status: number;
  ms: number;
  resources: number;
  versions: number;
}

/**
 * Two versions of every resource, as the store writes them: current = version 2, history rows of
 * versions 1 and 2, and one Provenance (current + history) per version.
 */
async function loadDirect(
  app: INestApplication,
  ctx: TenantContext,
  resources: Array<Record<string, unknown>>,
) {
  const writer = app.get(WriteProtocol, { strict: false });
  const connection = app.get<Connection>(getConnectionToken());
  const current = new Map<string, ResourceDoc>();
  // Organizations and Practitioners recur across patient records: one document per key.
  const history = new Map<string, HistoryDoc>();
  const t0 = Date.now() - 60_000;
  resources.forEach((resource, i) => {
    const type = String(resource.resourceType);
    const id = String(resource.id);
    for (const vid of [1, 2]) {
      const doc = writer.buildDoc(ctx, 'r4', type, id, vid, new Date(t0 + i + vid), resource);
      const provenance = writer.provenanceFor(ctx, 'r4', [doc], vid === 1 ? 'create' : 'update');
      for (const row of [historyOf(doc), historyOf(provenance)]) history.set(row._id, row);
      current.set(doc._id, doc);
      current.set(provenance._id, provenance);
    }
  });
  const insert = async (name: string, docs: object[]) => {
    for (let i = 0; i < docs.length; i += INSERT_CHUNK) {
      await connection.collection(name).insertMany(docs.slice(i, i + INSERT_CHUNK), { ordered: false });
      process.stderr.write(`\r${name}: ${Math.min(i + INSERT_CHUNK, docs.length)}/${docs.length}`);
    }
    process.stderr.write('\n');
  };
  await insert('resources', [...current.values()]);
  await insert('resource_history', [...history.values()]);
}

function userContext(clientId: string, userId: number): TenantContext {
  return { clientId, userId, scopes: ['user/*.*'], form: 'user-token' };
}

function countsOf(outcome: any): { resources: number; versions: number } {
  let resources = 0;
  let versions = 0;
  for (const issue of outcome?.issue?.slice(1) ?? []) {
    const match = /: (\d+) resources, (\d+) versions/.exec(String(issue.diagnostics));
    if (match) {
      resources += Number(match[1]);
      versions += Number(match[2]);
    }
  }
  return { resources, versions };
}

interface CommandTime {
  count: number;
  ms: number;
  maxMs: number;
}

/**
 * The database commands the purge sends, timed per command and collection (driver command
 * monitoring): which step of a batch takes the time.
 */
function traceCommands(connection: Connection) {
  const client = connection.getClient();
  const started = new Map<number, string>();
  const times = new Map<string, CommandTime>();
  const onStart = (e: CommandStartedEvent) => {
    const collection = e.command[e.commandName] as unknown;
    started.set(e.requestId, `${e.commandName} ${typeof collection === 'string' ? collection : ''}`);
  };
  const onEnd = (e: CommandSucceededEvent | CommandFailedEvent) => {
    const name = started.get(e.requestId);
    if (!name) return;
    started.delete(e.requestId);
    const time = times.get(name) ?? { count: 0, ms: 0, maxMs: 0 };
    time.count++;
    time.ms += e.duration;
    time.maxMs = Math.max(time.maxMs, e.duration);
    times.set(name, time);
  };
  client.on('commandStarted', onStart);
  client.on('commandSucceeded', onEnd);
  client.on('commandFailed', onEnd);
  return {
    stop: () => {
      client.off('commandStarted', onStart);
      client.off('commandSucceeded', onEnd);
      client.off('commandFailed', onEnd);
    },
    rows: () =>
      [...times]
        .filter(([name]) => !/^(hello|isMaster|ping|endSessions)/.test(name))
        .sort((a, b) => b[1].ms - a[1].ms)
        .map(([command, t]) => ({
          command,
          count: t.count,
          'total ms': Math.round(t.ms),
          'mean ms': (t.ms / t.count).toFixed(1),
          'max ms': Math.round(t.maxMs),
        })),
  };
}

function printTable(rows: Array<Record<string, string | number>>): void {
  const cols = Object.keys(rows[0]);
  const width = cols.map((c) => Math.max(c.length, ...rows.map((r) => String(r[c]).length)));
  console.log(cols.map((c, i) => c.padEnd(width[i])).join(' | '));
  console.log(width.map((w) => '-'.repeat(w)).join('-|-'));
  for (const r of rows) console.log(cols.map((c, i) => String(r[c]).padEnd(width[i])).join(' | '));
}

async function main(): Promise<void> {
  const patients = process.env.PURGE_BENCH_PATIENTS ? Number(process.env.PURGE_BENCH_PATIENTS) : Infinity;
  const loadMode = process.env.PURGE_BENCH_LOAD === 'http' ? 'http' : 'direct';
  const dir = mkdtempSync(join(tmpdir(), 'bench-purge-'));
  const database = await resolveDatabase(process.env.MONGO_URL, dir);
  const settings = parseSettings({
    LOG_LEVEL: process.env.BENCH_LOG_LEVEL ?? 'fatal',
    PORT: '0',
    PURGE_BUDGET_MS: String(BUDGET_MS),
    BODY_LIMIT: '50mb',
    USER_MGMT_RATE_LIMIT: '1000000',
    DIRECTORY_SEED: 'false',
    // command monitoring on: the purge's commands are timed per kind below (where the time goes)
    METRICS_ENABLED: 'true',
  });
  const app = await createApp(settings, database, `bench_purge_${randomBytes(4).toString('hex')}`);
  await app.listen(0, '127.0.0.1');
  const connection = app.get<Connection>(getConnectionToken());
  try {
    const engine = await engineLabel(connection, database);
    const address = app.getHttpServer().address() as { port: number };
    const baseUrl = `http://127.0.0.1:${address.port}`;
    const client = await app.get(ClientsService).create({ name: 'bench purge', programs: [] });
    const created = await call(`${baseUrl}/user-management/v1/user`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({
        app_user_id: 'bench',
        client_id: client.client_id,
        client_secret: client.client_secret,
      }),
    });
    const token = String(created.body.access_token);
    const userFilter = { c: client.client_id, u: Number(created.body.service_user_id), v: 'r4' };

    const resources = loadSyntheaResources('r4', patients);
    const loadStarted = Date.now();
    if (loadMode === 'http') {
      await loadInBundles(baseUrl, token, resources, 'version 1');
      await loadInBundles(baseUrl, token, resources, 'version 2');
    } else {
      await loadDirect(app, userContext(client.client_id, userFilter.u), resources);
    }
    const loadSeconds = (Date.now() - loadStarted) / 1000;
    const storedResources = await connection.collection('resources').countDocuments(userFilter);
    const storedVersions = await connection.collection('resource_history').countDocuments(userFilter);

    const rounds: Round[] = [];
    const commands = traceCommands(connection);
    const purgeStarted = Date.now();
    for (let round = 1; round <= 1000; round++) {
      const started = Date.now();
      const res = await call(`${baseUrl}/r4/purge`, {
        method: 'DELETE',
        headers: { Authorization: `Bearer ${token}` },
      });
      rounds.push({ round, status: res.status, ms: Date.now() - started, ...countsOf(res.body) });
      if (res.status === 200) break;
      if (res.status !== 504) throw new Error(`purge failed: ${res.status} ${JSON.stringify(res.body)}`);
    }
    const purgeSeconds = (Date.now() - purgeStarted) / 1000;
    commands.stop();
    const removed = rounds.reduce((sum, r) => sum + r.resources, 0);
    const removedVersions = rounds.reduce((sum, r) => sum + r.versions, 0);
    const left = await connection.collection('resources').countDocuments(userFilter);
    const perSecond = removed / purgeSeconds;

    // The raw driver on the same documents, loaded again.
    await loadDirect(app, userContext(client.client_id, userFilter.u), resources);
    const driverStarted = Date.now();
    const driverRemoved = (await connection.collection('resources').deleteMany(userFilter)).deletedCount;
    await connection.collection('resource_history').deleteMany(userFilter);
    const driverSeconds = (Date.now() - driverStarted) / 1000;
    const driverPerSecond = driverRemoved / driverSeconds;

    printTable(rounds.map((r) => ({ ...r })));
    console.log();
    printTable(commands.rows());
    console.log();
    printTable([
      {
        engine,
        'synthea patients': Number.isFinite(patients) ? patients : 'all',
        load: loadMode,
        'resources stored': storedResources,
        'versions stored': storedVersions,
        'load s': loadSeconds.toFixed(1),
        rounds: rounds.length,
        'purge s': purgeSeconds.toFixed(2),
        'resources/s': Math.round(perSecond),
        'versions/s': Math.round(removedVersions / purgeSeconds),
        left,
        'driver s': driverSeconds.toFixed(2),
        'driver resources/s': Math.round(driverPerSecond),
        'API / driver': (perSecond / driverPerSecond).toFixed(2),
      },
    ]);
    mkdirSync(join(__dirname, 'results'), { recursive: true });
    writeFileSync(
      join(__dirname, 'results', 'purge.json'),
      JSON.stringify(
        {
          at: new Date().toISOString(),
          engine,
          budgetMs: BUDGET_MS,
          patients: Number.isFinite(patients) ? patients : 'all',
          load: loadMode,
          storedResources,
          storedVersions,
          removed,
          removedVersions,
          left,
          purgeSeconds,
          driverSeconds,
          driverPerSecond,
          rounds,
          commands: commands.rows(),
          summary: [
            {
              figure: 'resources (with history) removed per second',
              value: perSecond,
              unit: 'resources/s',
              target: `≥ ${TARGET_PER_SECOND}`,
            },
            { figure: 'driver deleteMany, same documents', value: driverPerSecond, unit: 'resources/s' },
            { figure: 'purge / driver', value: perSecond / driverPerSecond, unit: '×' },
            {
              figure: 'history versions removed per second',
              value: removedVersions / purgeSeconds,
              unit: 'versions/s',
            },
            { figure: `rounds of ${BUDGET_MS} ms budget`, value: rounds.length },
          ],
        },
        null,
        2,
      ),
    );
    if (left !== 0 || removed !== storedResources)
      throw new Error(`purge incomplete: ${left} left, ${removed} removed`);
  } finally {
    await connection.dropDatabase().catch(() => undefined);
    await app.close();
    await database.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
