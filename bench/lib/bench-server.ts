import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { AddressInfo } from 'node:net';
import { getConnectionToken } from '@nestjs/mongoose';
import type { INestApplication } from '@nestjs/common';
import type { Connection } from 'mongoose';
import { parseSettings, type Settings } from '../../src/config/settings';
import { createApp } from '../../src/create-app';
import { resolveDatabase, type DatabaseHandle } from '../../src/database/embedded-database';
import { ClientsService } from '../../src/modules/auth/clients/clients.service';
import { buildIfNeeded, ServerProcess } from '../../test/support/server-process';
import { GrantService } from '../../src/modules/auth/tokens/grant.service';
import { UsersService } from '../../src/modules/users/users.service';

/**
 * Shared benchmark plumbing: the real app on a real HTTP port, on `MONGO_URL` or an embedded
 * database resolved like test/global-setup.ts (a DocumentDB/mongod of its own in a temporary folder),
 * with a database of its own that is dropped on close.
 */
export interface BenchServer {
  baseUrl: string;
  port: number;
  app: INestApplication;
  connection: Connection;
  settings: Settings;
  database: DatabaseHandle;
  /** `DocumentDB 0.108-0 on PostgreSQL 15.x` or `MongoDB 8.0.x` (see `engineLabel`). */
  engine: string;
  dbName: string;
  close(): Promise<void>;
}

/** `uri`: the database to use (default `MONGO_URL`; none: an embedded one of its own). */
export async function startBenchServer(
  env: Record<string, string> = {},
  uri: string | undefined = process.env.MONGO_URL,
): Promise<BenchServer> {
  const dir = mkdtempSync(join(tmpdir(), 'fhir-bench-db-'));
  const database = await resolveDatabase(uri, dir);
  // BENCH_DB names a database that is kept after the run (and reused by the next): benchmarks
  // that load data can then measure again without loading it again (see reuseBenchUsers).
  const kept = process.env.BENCH_DB;
  const dbName = kept ?? `bench_${randomBytes(4).toString('hex')}`;
  const settings = parseSettings({
    LOG_LEVEL: process.env.BENCH_LOG_LEVEL ?? 'silent',
    USER_MGMT_RATE_LIMIT: '10000000',
    TOKEN_FAILURE_LIMIT: '10000000',
    // One client drives every connection of these benchmarks: the per-client limits (in-flight
    // requests, response bytes per second; 429 past them) are not what they measure —
    // bench/fairness.ts does, with the server in its own process and the defaults.
    CLIENT_MAX_CONCURRENT_REQUESTS: '1000',
    CLIENT_RESPONSE_BYTES_PER_SECOND: '0',
    PORT: '0',
    ...env,
  });
  const app = await createApp(settings, { ...database, stop: async () => undefined }, dbName);
  await app.listen(0, '127.0.0.1');
  const port = (app.getHttpServer().address() as AddressInfo).port;
  const connection = app.get<Connection>(getConnectionToken());
  const engine = await engineLabel(connection, database);
  return {
    baseUrl: `http://127.0.0.1:${port}`,
    port,
    app,
    connection,
    settings,
    database,
    engine,
    dbName,
    close: async () => {
      if (kept === undefined) await connection.dropDatabase().catch(() => undefined);
      await app.close();
      await database.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/**
 * The same store served by the real server in a process of its own (`npm start`'s node, flags and
 * script, as operators run it), for measuring: in `startBenchServer`'s process the app shares its event loop
 * with the load generator and the bench's driver loops. Same database, signing key (DATA_DIR),
 * issuer and audience, so tokens issued in-process work there; the same lifted per-client limits. Stop it with `stop()`.
 */
export async function serveInOwnProcess(
  server: Pick<BenchServer, 'database' | 'dbName' | 'settings'>,
  env: Record<string, string> = {},
  /** Another built checkout of the server to run (A/B benchmarks); this one by default. */
  checkout?: string,
): Promise<ServerProcess> {
  if (checkout === undefined) buildIfNeeded();
  const child = new ServerProcess(
    {
      MONGO_URL: server.database.uri,
      MONGO_DB: server.dbName,
      DATA_DIR: resolve(server.settings.dataDir),
      JWT_ISSUER: server.settings.jwt.issuer,
      JWT_AUDIENCE: server.settings.jwt.audience,
      LOG_LEVEL: process.env.BENCH_LOG_LEVEL ?? 'silent',
      CLIENT_MAX_CONCURRENT_REQUESTS: '1000',
      CLIENT_RESPONSE_BYTES_PER_SECOND: '0',
      DIRECTORY_SEED: 'false',
      ...env,
    },
    undefined,
    checkout,
  );
  await child.start();
  return child;
}

/** The engine that answers: the embedded engine's own description, else what buildInfo says. */
export async function engineLabel(connection: Connection, database?: DatabaseHandle): Promise<string> {
  if (database?.description) return database.description;
  const info = await connection.db!.admin().command({ buildInfo: 1 });
  // MongoDB reports its git version; MongoDB-compatible engines (DocumentDB) report a wire version only.
  return info.gitVersion ? `MongoDB ${info.version}` : `MongoDB-compatible engine (wire ${info.version})`;
}

export interface BenchUser {
  clientId: string;
  serviceUserId: number;
  accessToken: string;
}

const agent = new http.Agent({ keepAlive: true, maxSockets: 64 });

/**
 * A JSON request over a keep-alive connection (lighter than fetch on a 2-core machine). A reused
 * socket the server closed while this process was busy (its keep-alive timeout passed during a
 * long synchronous step) fails with ECONNRESET before anything was processed: sent again once on
 * a new socket (https://nodejs.org/api/http.html#requestreusedsocket).
 */
export async function httpJson(
  baseUrl: string,
  method: string,
  path: string,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<{ status: number; body: any; retryAfterS?: number }> {
  try {
    return await httpJsonOnce(baseUrl, method, path, body, headers);
  } catch (error) {
    if ((error as { staleSocket?: boolean }).staleSocket)
      return httpJsonOnce(baseUrl, method, path, body, headers);
    throw error;
  }
}

function httpJsonOnce(
  baseUrl: string,
  method: string,
  path: string,
  body: unknown,
  headers: Record<string, string>,
): Promise<{ status: number; body: any; retryAfterS?: number }> {
  const payload = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
  return new Promise((resolve, reject) => {
    const req = http.request(
      `${baseUrl}${path}`,
      {
        method,
        agent,
        headers: {
          ...(payload
            ? { 'Content-Type': 'application/fhir+json', 'Content-Length': String(payload.length) }
            : {}),
          ...headers,
        },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          let parsed: unknown = text;
          try {
            parsed = JSON.parse(text);
          } catch {
            // not JSON: keep the text
          }
          const retryAfter = Number(res.headers['retry-after']);
          resolve({
            status: res.statusCode ?? 0,
            body: parsed,
            ...(Number.isFinite(retryAfter) ? { retryAfterS: retryAfter } : {}),
          });
        });
      },
    );
    req.on('error', (error: Error & { code?: string; staleSocket?: boolean }) => {
      if (req.reusedSocket && error.code === 'ECONNRESET') error.staleSocket = true;
      reject(error);
    });
    if (payload) req.write(payload);
    req.end();
  });
}

/**
 * `httpJson` that waits as the server's Retry-After asks when refused with 429/503 (a well-behaved
 * client loading data), up to `attempts` times.
 */
export async function httpJsonPolitely(
  baseUrl: string,
  method: string,
  path: string,
  body?: unknown,
  headers: Record<string, string> = {},
  attempts = 20,
): Promise<{ status: number; body: any }> {
  for (let attempt = 1; ; attempt++) {
    const res = await httpJson(baseUrl, method, path, body, headers);
    if ((res.status !== 429 && res.status !== 503) || attempt >= attempts) return res;
    await new Promise((r) => setTimeout(r, Math.max(0.1, res.retryAfterS ?? 1) * 1000));
  }
}

/** `clients` client applications with `users` users each, created through the real routes. */
export async function createBenchUsers(
  server: BenchServer,
  clients: number,
  users: number,
): Promise<BenchUser[]> {
  const out: BenchUser[] = [];
  for (let c = 0; c < clients; c++) {
    const client = await server.app
      .get(ClientsService)
      .create({ name: `bench client ${c}`, programs: ['patient-access'] });
    for (let u = 0; u < users; u++) {
      const res = await httpJson(server.baseUrl, 'POST', '/user-management/v1/user', {
        app_user_id: `bench-${c}-${u}`,
        client_id: client.client_id,
        client_secret: client.client_secret,
      });
      if (res.status !== 200)
        throw new Error(`user creation failed: ${res.status} ${JSON.stringify(res.body)}`);
      out.push({
        clientId: client.client_id,
        serviceUserId: Number(res.body.service_user_id),
        accessToken: String(res.body.access_token),
      });
    }
  }
  return out;
}

/**
 * The users `createBenchUsers` made in an earlier run on a kept database (BENCH_DB), with fresh
 * access tokens; empty when that database holds no resources.
 */
export async function reuseBenchUsers(server: BenchServer, users: number): Promise<BenchUser[]> {
  // The client that owns the stored resources (an interrupted earlier run may have made others).
  const owner = await server.connection.db!.collection('resources').findOne({}, { projection: { c: 1 } });
  if (!owner) return [];
  const clientId = String(owner.c);
  const grants = server.app.get(GrantService);
  const out: BenchUser[] = [];
  for (let u = 0; u < users; u++) {
    const appUserId = `bench-0-${u}`;
    const user = await server.app.get(UsersService).findUserByAppUserId(clientId, appUserId);
    if (!user) return [];
    const tokens = await grants.issueUserTokens(
      { clientId },
      { userId: user.service_user_id, appUserId },
      grants.userScopes(undefined),
    );
    out.push({ clientId, serviceUserId: user.service_user_id, accessToken: tokens.access_token });
  }
  return out;
}

/** Runs `total` tasks with at most `concurrency` in flight. */
export async function inParallel(
  total: number,
  concurrency: number,
  one: (i: number) => Promise<void>,
): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(concurrency, total) }, async () => {
      while (next < total) await one(next++);
    }),
  );
}

/** Prints rows as an aligned table. */
export function printTable(rows: Array<Record<string, string | number>>): void {
  if (rows.length === 0) return;
  const cols = Object.keys(rows[0]);
  const cell = (v: string | number | undefined) =>
    typeof v === 'number' ? (Number.isInteger(v) ? String(v) : v.toFixed(2)) : (v ?? '');
  const width = cols.map((c) => Math.max(c.length, ...rows.map((r) => cell(r[c]).length)));
  console.log(cols.map((c, i) => c.padEnd(width[i])).join(' | '));
  console.log(width.map((w) => '-'.repeat(w)).join('-|-'));
  for (const r of rows) console.log(cols.map((c, i) => cell(r[c]).padEnd(width[i])).join(' | '));
}
