/**
 * Identity throughput: authorization-code exchange over HTTP (POST /oauth2/token, sequential and
 * 8 concurrent), and the per-request cost of the tenant guard for each credential form (bearer
 * user token, client headers with a warm verification cache, client headers with the cache cleared: a digest check and the client's read).
 * Starts its own embedded database (like test/global-setup.ts) unless MONGO_URL is set.
 * Prints a table and writes bench/results/tokens.json.
 * Run: npx ts-node --transpile-only -r tsconfig-paths/register bench/tokens.ts
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Request } from 'express';
import { parseSettings } from '../src/config/settings';
import { createApp } from '../src/create-app';
import { resolveDatabase } from '../src/database/embedded-database';
import { GrantService } from '../src/modules/auth/tokens/grant.service';
import { TokenService } from '../src/modules/auth/tokens/token.service';
import { ClientsService } from '../src/modules/auth/clients/clients.service';
import { TenantResolver } from '../src/tenancy/tenant-resolver';
import { createBenchUser } from './lib/bench-user';

interface Row {
  scenario: string;
  operations: number;
  seconds: number;
  perSecond: number;
  meanMs: number;
}

async function timed(scenario: string, operations: number, run: () => Promise<void>): Promise<Row> {
  const start = process.hrtime.bigint();
  await run();
  const seconds = Number(process.hrtime.bigint() - start) / 1e9;
  return {
    scenario,
    operations,
    seconds,
    perSecond: operations / seconds,
    meanMs: (seconds * 1000) / operations,
  };
}

async function inParallel(
  total: number,
  concurrency: number,
  one: (i: number) => Promise<void>,
): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < total) await one(next++);
    }),
  );
}

function fakeRequest(headers: Record<string, string>): Request {
  return { method: 'GET', headers, query: {} } as unknown as Request;
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'bench-tokens-'));
  const database = await resolveDatabase(process.env.MONGO_URL, join(dir, 'db'));
  const settings = parseSettings({
    LOG_LEVEL: 'silent',
    DATA_DIR: dir,
    USER_MGMT_RATE_LIMIT: '10000000',
    PORT: '0',
  });
  const app = await createApp(settings, database, `bench_tokens_${Date.now()}`);
  await app.listen(0, '127.0.0.1');
  const address = app.getHttpServer().address() as { port: number };
  const base = `http://127.0.0.1:${address.port}`;
  const rows: Row[] = [];
  try {
    const { client, user: created } = await createBenchUser(app, { programs: ['epa'] });
    const user = { userId: created.service_user_id, appUserId: 'bench-user' };
    const grants = app.get(GrantService);
    const scope = { clientId: client.client_id };

    const exchange = async (code: string) => {
      const res = await fetch(`${base}/oauth2/token`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({
          grant_type: 'authorization_code',
          code,
          client_id: client.client_id,
          client_secret: client.client_secret,
        }),
      });
      if (res.status !== 200) throw new Error(`exchange failed: ${res.status} ${await res.text()}`);
      await res.arrayBuffer();
    };
    for (const [label, n, concurrency] of [
      ['code exchange, HTTP, sequential', 300, 1],
      ['code exchange, HTTP, 8 concurrent', 600, 8],
    ] as const) {
      const codes = await Promise.all(
        Array.from({ length: n }, () => grants.issueCode(scope, user, ['user/*.*'])),
      );
      rows.push(await timed(label, n, () => inParallel(n, concurrency, (i) => exchange(codes[i]))));
    }

    const tokens = app.get(TokenService);
    const accessToken = created.access_token!;
    // First sight of each token: one RS256 verification (distinct tokens, so the cache never hits).
    const fresh = Array.from({ length: 2000 }, (_, i) =>
      tokens.signUserAccessToken(client.client_id, created.service_user_id, ['user/*.*'], `bench-${i}`),
    );
    rows.push(
      await timed('verifyAccessToken, first sight (RS256)', fresh.length, async () => {
        for (const token of fresh) if (!tokens.verifyAccessToken(token)) throw new Error('invalid');
      }),
    );
    rows.push(
      await timed('verifyAccessToken, same token again (cache)', 20000, async () => {
        for (let i = 0; i < 20000; i++)
          if (!tokens.verifyAccessToken(accessToken)) throw new Error('invalid');
      }),
    );
    const resolver = app.get(TenantResolver);
    const bearerReq = fakeRequest({ authorization: `Bearer ${accessToken}` });
    rows.push(
      await timed('guard: bearer user token', 20000, async () => {
        for (let i = 0; i < 20000; i++) await resolver.resolve(bearerReq);
      }),
    );
    const headerReq = fakeRequest({
      client_id: client.client_id,
      client_secret: client.client_secret,
      'x-service-user-id': String(created.service_user_id),
    });
    rows.push(
      await timed('guard: client headers, warm cache (+ user lookup)', 2000, async () => {
        for (let i = 0; i < 2000; i++) await resolver.resolve(headerReq);
      }),
    );
    const clients = app.get(ClientsService);
    rows.push(
      await timed('guard: client headers, cold (digest check + client read every time)', 50, async () => {
        for (let i = 0; i < 50; i++) {
          (clients as unknown as { verified: { clear(): void } }).verified.clear();
          await resolver.resolve(headerReq);
        }
      }),
    );
  } finally {
    await app.close();
    rmSync(dir, { recursive: true, force: true });
  }

  console.log(`engine: ${database.engine}; ${cpus().length} cores (${cpus()[0]?.model ?? '?'})`);
  console.table(
    rows.map((r) => ({
      scenario: r.scenario,
      ops: r.operations,
      'ops/s': Math.round(r.perSecond),
      'mean ms': r.meanMs.toFixed(3),
    })),
  );
  mkdirSync(join(__dirname, 'results'), { recursive: true });
  writeFileSync(
    join(__dirname, 'results', 'tokens.json'),
    JSON.stringify(
      { date: new Date().toISOString(), engine: database.engine, cores: cpus().length, rows },
      null,
      2,
    ),
  );
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
