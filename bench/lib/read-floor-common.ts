/**
 * What the read benchmark's floor servers share (bench/read.ts runs each in a process of its own):
 * the app's driver call for `GET /r4/Observation/{id}` (`findOneByCommand` by key and tenant, without
 * the index entries, with the app's per-operation deadline), the reply (the stored JSON with the
 * headers a FHIR read carries), and the ladder's switches that move the floor step by step toward
 * what the app's process does around that call (docs/storage.md "Reads measured"):
 * - READ_FLOOR_CLIENT_OPTIONS=app: the app's MongoClient options (database.module.ts: the pool sized
 *   from the lanes, selection/connect timeouts, no socket timeout, command monitoring as the app);
 * - READ_FLOOR_MONGOOSE=1: through a Mongoose connection with those options, as the app reads;
 * - READ_FLOOR_APP_PROCESS=1: in the app's own process (the built app created and initialised, its
 *   module graph, FHIR definitions, caches and timers on the heap; it serves nothing), reading
 *   through the app's Mongoose connection;
 * - READ_FLOOR_LANE=n: at most n reads at the engine at once, the others queued (the app's read lane);
 * - READ_FLOOR_WORK_US=µs, READ_FLOOR_WORK_KB=KB: synchronous work of that much process CPU per read
 *   before the look-up, allocating that many KB of small objects kept until the reply (the app's own
 *   layers stand-in: does the same driver call cost more beside it?). Its CPU is counted and printed
 *   at exit (`stats {"reads","workUs"}`) so that the bench can take it out of the row.
 */
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import { join } from 'node:path';
import { mongo } from 'mongoose';
import mongoose from 'mongoose';
import { resourceKey } from '../../libs/fhir/src/storage/keys';
import { parseSettings } from '../../src/config/settings';
import { serverSelectionTimeoutMs } from '../../src/database/database-liveness';
import { driverPoolOptions } from '../../src/database/driver-pool';
import { findOneByCommand } from '../../src/database/point-read';

export interface StoredRead {
  _id: string;
  vid: number;
  lu: Date;
  json: string;
}

/** A floor's `GET /r4/Observation/{id}`: the stored document of `id`, or null. */
export interface FloorReads {
  read(id: string): Promise<StoredRead | null>;
  close(): Promise<void>;
}

function env(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is required`);
  return value;
}

/** The app's connection options (database.module.ts), its default lanes and metrics setting. */
function appClientOptions(timeoutMS: number): mongo.MongoClientOptions {
  const settings = parseSettings({ DB_TIMEOUT_MS: String(timeoutMS) });
  return {
    serverSelectionTimeoutMS: serverSelectionTimeoutMs(settings.dbTimeoutMs),
    socketTimeoutMS: 0,
    connectTimeoutMS: settings.dbTimeoutMs,
    timeoutMS: settings.dbTimeoutMs,
    ...driverPoolOptions(settings),
    monitorCommands: settings.metricsEnabled,
  };
}

/** The built app (dist, as `npm start` runs it) created and initialised in this process. */
async function appConnectionDb(
  url: string,
  dbName: string,
): Promise<{ db: mongo.Db; close(): Promise<void> }> {
  const dist = join(__dirname, '..', '..', 'dist', 'src');
  /* eslint-disable @typescript-eslint/no-require-imports */
  const { createApp } = require(join(dist, 'create-app')) as typeof import('../../src/create-app');
  const { resolveDatabase } = require(
    join(dist, 'database', 'embedded-database'),
  ) as typeof import('../../src/database/embedded-database');
  /* eslint-enable @typescript-eslint/no-require-imports */
  const settings = parseSettings({ ...process.env, MONGO_URL: url, MONGO_DB: dbName, LOG_LEVEL: 'silent' });
  const database = await resolveDatabase(url, settings.dataDir, settings.engine, { role: 'server' });
  const app = await createApp(settings, database, dbName);
  await app.init();
  const connection = app.get<mongoose.Connection>('DatabaseConnection');
  return { db: connection.db!, close: () => app.close() };
}

/** The floor's driver, as READ_FLOOR_* say (see above). */
export async function floorReads(): Promise<FloorReads> {
  const url = env('READ_FLOOR_MONGO_URL');
  const dbName = env('READ_FLOOR_DB');
  const clientId = env('READ_FLOOR_CLIENT');
  const userId = Number(env('READ_FLOOR_USER'));
  const timeoutMS = Number(env('READ_FLOOR_TIMEOUT_MS'));
  let db: mongo.Db;
  let close: () => Promise<void>;
  if (process.env.READ_FLOOR_APP_PROCESS === '1') {
    ({ db, close } = await appConnectionDb(url, dbName));
  } else if (process.env.READ_FLOOR_MONGOOSE === '1') {
    const connection = await mongoose
      .createConnection(url, {
        dbName,
        bufferCommands: false,
        autoIndex: false,
        autoCreate: false,
        ...appClientOptions(timeoutMS),
      })
      .asPromise();
    db = connection.db!;
    close = () => connection.close();
  } else {
    const options =
      process.env.READ_FLOOR_CLIENT_OPTIONS === 'app' ? appClientOptions(timeoutMS) : { timeoutMS };
    const client = await mongo.MongoClient.connect(url, options);
    db = client.db(dbName);
    close = () => client.close();
  }
  const resources = db.collection<StoredRead>('resources');
  const lookup = (id: string) =>
    findOneByCommand(
      resources,
      { _id: resourceKey('r4', clientId, 'Observation', id), c: clientId, u: userId },
      { projection: { idx: 0 } },
    );
  const lane = Number(process.env.READ_FLOOR_LANE ?? 0);
  const read = lane > 0 ? inLane(lane, lookup) : lookup;
  return { read: withWork(read), close };
}

/** `read` with at most `size` calls running; the rest wait in arrival order. */
function inLane<A, R>(size: number, read: (arg: A) => Promise<R>): (arg: A) => Promise<R> {
  let running = 0;
  const waiting: Array<() => void> = [];
  const release = () => {
    running--;
    waiting.shift()?.();
  };
  return async (arg) => {
    if (running >= size) await new Promise<void>((admit) => waiting.push(admit));
    running++;
    try {
      return await read(arg);
    } finally {
      release();
    }
  };
}

const WORK_US = Number(process.env.READ_FLOOR_WORK_US ?? 0);
const WORK_KB = Number(process.env.READ_FLOOR_WORK_KB ?? 0);
/** Reads served and the process CPU the added work took (µs), printed at exit. */
const stats = { reads: 0, workUs: 0 };

/** `read` after READ_FLOOR_WORK_US of CPU that allocates READ_FLOOR_WORK_KB kept until it answers. */
function withWork(
  read: (id: string) => Promise<StoredRead | null>,
): (id: string) => Promise<StoredRead | null> {
  if (WORK_US <= 0) return read;
  return async (id) => {
    const start = process.cpuUsage();
    const kept: Array<{ i: number; s: string }> = [];
    // ≈ 40 bytes a small object with a short string: KB × 25 of them
    const objects = WORK_KB * 25;
    let spent = 0;
    let sink = 0;
    while (spent < WORK_US) {
      for (let i = 0; i < 200; i++) {
        if (kept.length < objects) kept.push({ i, s: String(i + spent) });
        else sink = (sink * 31 + i) | 0;
      }
      const used = process.cpuUsage(start);
      spent = used.user + used.system;
    }
    stats.workUs += spent;
    stats.reads++;
    const doc = await read(id);
    // the objects live until the answer, as a request's own objects do
    return kept.length + sink === -1 ? null : doc;
  };
}

/** Listens on a free port, says `listening <port>`; on SIGTERM prints the stats and exits. */
export function serveFloor(server: Server, reads: FloorReads): void {
  server.listen(0, '127.0.0.1', () => {
    process.stdout.write(`listening ${(server.address() as AddressInfo).port}\n`);
  });
  process.on('SIGTERM', () => {
    process.stdout.write(`stats ${JSON.stringify(stats)}\n`);
    server.close();
    server.closeAllConnections();
    void reads.close().finally(() => process.exit(0));
  });
}

/** The floor's answer: the stored JSON as stored, with a FHIR read's media type, ETag and Last-Modified. */
export function writeRead(res: import('node:http').ServerResponse, doc: StoredRead | null): void {
  if (!doc) return void res.writeHead(404).end();
  res
    .writeHead(200, {
      'content-type': 'application/fhir+json; charset=utf-8',
      etag: `W/"${doc.vid}"`,
      'last-modified': doc.lu.toUTCString(),
    })
    .end(doc.json);
}

/** The id of `/r4/Observation/{id}`. */
export function idOf(url: string | undefined): string {
  return (url ?? '').split('/')[3] ?? '';
}
