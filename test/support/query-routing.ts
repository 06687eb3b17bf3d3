import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { mongo, type Connection } from 'mongoose';
import type { RecordedQuery } from './query-plans';

/**
 * How many shards a recorded query is sent to, on a sharded cluster (the routing suite,
 * test/sharded/routing.e2e-spec.ts). Two sources:
 *
 * - the router's own `explain` (mongos, or the DocumentDB gateway): MongoDB names the targeted
 *   shards (`winningPlan.stage` `SINGLE_SHARD` with one entry in `shards`; an aggregate lists one key
 *   per shard under `shards`); the DocumentDB gateway states `shardCount` (find, count, aggregate) but
 *   says nothing for some commands (distinct);
 * - on DocumentDB distributed, the coordinator's PostgreSQL `EXPLAIN` of the same command
 *   (`documentdb_api_catalog.bson_aggregation_find/_pipeline/_count/_distinct`), whose Citus
 *   `Task Count` is the number of shards the coordinator sends work to. It is always there, so when
 *   the coordinator is reachable it decides; the router's figure is kept for the messages.
 */

export interface RouteReport {
  query: RecordedQuery;
  /** Shards the query is sent to; null when neither source says. */
  shards: number | null;
  /** What the router's explain said (null: nothing). */
  router: number | null;
  /** The coordinator's highest Citus `Task Count` (null: not asked or not said). */
  coordinator: number | null;
  /** The coordinator's plan reads a whole shard table (`Seq Scan`): no index serves the query. */
  seqScan: boolean;
}

/**
 * libpq connection string of the Citus coordinator: `TEST_COORDINATOR_PG` (e.g. `host=DATA_DIR/run
 * port=9712 user=postgres dbname=postgres`), else the socket of the cluster the sharded test run
 * started (test/sharded/global-setup.ts: `TEST_CLUSTER_DIR/cluster`), else none.
 */
export function coordinatorFromEnv(): string | null {
  if (process.env.TEST_COORDINATOR_PG) return process.env.TEST_COORDINATOR_PG;
  const dir = process.env.TEST_CLUSTER_DIR;
  const socketDir = dir ? join(dir, 'cluster', 'run') : undefined;
  return socketDir && existsSync(join(socketDir, '.s.PGSQL.9712'))
    ? `host=${socketDir} port=9712 user=postgres dbname=postgres`
    : null;
}

/** The shard count a router's explain states, wherever the engine puts it. */
export function routerShardCount(explain: unknown): number | null {
  let found: number | null = null;
  const visit = (node: unknown): void => {
    if (found !== null || typeof node !== 'object' || node === null) return;
    if (Array.isArray(node)) return node.forEach(visit);
    const record = node as Record<string, unknown>;
    if (typeof record.shardCount === 'number') {
      found = record.shardCount;
      return;
    }
    const shards = record.shards;
    if (Array.isArray(shards)) {
      found = shards.length;
      return;
    }
    if (shards && typeof shards === 'object') {
      found = Object.keys(shards).length;
      return;
    }
    if (record.stage === 'SINGLE_SHARD') {
      found = 1;
      return;
    }
    for (const [key, value] of Object.entries(record)) if (key !== 'command') visit(value);
  };
  visit(explain);
  return found;
}

const COORDINATOR_FUNCTIONS: Record<string, string> = {
  find: 'bson_aggregation_find',
  aggregate: 'bson_aggregation_pipeline',
  count: 'bson_aggregation_count',
  distinct: 'bson_aggregation_distinct',
};

/** The coordinator's plan for `command` in database `db` (PostgreSQL EXPLAIN text), or null. */
export async function coordinatorPlan(
  conninfo: string,
  db: string,
  command: Record<string, unknown>,
): Promise<string | null> {
  const name = Object.keys(command)[0];
  const fn = COORDINATOR_FUNCTIONS[name];
  if (!fn) return null;
  // psql variables quote the values (:'spec'): the command is never spliced into the SQL text
  const sql = `EXPLAIN SELECT document FROM documentdb_api_catalog.${fn}(:'db', :'spec'::documentdb_core.bson);\n`;
  const spec = mongo.BSON.EJSON.stringify(command, { relaxed: false });
  const psql = process.env.TEST_PSQL ?? '/usr/lib/postgresql/15/bin/psql';
  const out = await new Promise<string>((resolve, reject) => {
    const child = execFile(
      psql,
      ['-X', '-A', '-t', '-v', 'ON_ERROR_STOP=1', '-v', `db=${db}`, '-v', `spec=${spec}`, conninfo],
      { encoding: 'utf8', maxBuffer: 16 << 20 },
      (error, stdout, stderr) => (error ? reject(new Error(`${error.message}\n${stderr}`)) : resolve(stdout)),
    );
    child.stdin!.end(sql);
  });
  return out;
}

/** The highest Citus `Task Count` of a coordinator plan (a merge step on the coordinator counts 1). */
export function taskCount(plan: string): number | null {
  const counts = [...plan.matchAll(/Task Count: (\d+)/g)].map((m) => Number(m[1]));
  return counts.length > 0 ? Math.max(...counts) : null;
}

/** Where one recorded query goes: the router's explain, and the coordinator's plan when reachable. */
export async function routeQuery(
  connection: Connection,
  query: RecordedQuery,
  coordinator: string | null = coordinatorFromEnv(),
): Promise<RouteReport> {
  const plan = coordinator
    ? await coordinatorPlan(coordinator, connection.db!.databaseName, query.command)
    : null;
  // The DocumentDB gateway fails to translate some distributed plans ("missing field `Node`"):
  // with the coordinator's plan at hand that is no loss.
  const explain = await connection
    .db!.command({ explain: query.command, verbosity: 'queryPlanner' })
    .catch((error: unknown) => {
      if (plan === null) throw error;
      return null;
    });
  const router = explain ? routerShardCount(explain) : null;
  const fromCoordinator = plan ? taskCount(plan) : null;
  return {
    query,
    shards: fromCoordinator ?? router,
    router,
    coordinator: fromCoordinator,
    seqScan: plan ? /Seq Scan on documents_/.test(plan) : false,
  };
}

export function describeRoute(report: RouteReport): string {
  return `${report.shards ?? '?'} shard(s) [router ${report.router ?? '-'}, coordinator ${report.coordinator ?? '-'}] :: ${report.query.summary}`;
}
