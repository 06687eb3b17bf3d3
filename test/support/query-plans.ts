import type { Connection, mongo } from 'mongoose';

/**
 * Query-plan checks for the explain suite (test/query-plans.e2e-spec.ts, every hot
 * query is an index scan). The queries are not copied into the test: the app runs with driver command
 * monitoring on (`METRICS_ENABLED=true` turns it on), the commands its repositories send while a request is served are recorded, and
 * each is explained afterwards (`explain` with verbosity `queryPlanner`).
 *
 * Both engines answer `explain` in MongoDB's shape: `queryPlanner.winningPlan` (aggregate: per stage
 * under `stages[].$cursor`), a tree of `stage` nodes joined by `inputStage`/`inputStages`
 * (MongoDB 7+ may nest it under `queryPlan`). DocumentDB translates its PostgreSQL plan into the same
 * names (`IXSCAN` under `FETCH`, `COLLSCAN` for a sequential scan) but explains only find, count,
 * distinct and aggregate: the filter of a delete, update or findAndModify is explained as a find.
 */

/** Query commands the suite explains; writes by key only (insert) have no plan worth checking. */
const QUERY_COMMANDS = new Set([
  'find',
  'count',
  'distinct',
  'aggregate',
  'delete',
  'update',
  'findAndModify',
]);

/** Stage names that read an index (MongoDB 8 answers `_id` look-ups with the EXPRESS stages). */
const INDEX_STAGES = new Set([
  'IXSCAN',
  'IDHACK',
  'EXPRESS_IXSCAN',
  'EXPRESS_CLUSTERED_IXSCAN',
  'COUNT_SCAN',
  'DISTINCT_SCAN',
]);

export interface RecordedQuery {
  collection: string;
  /** The command to explain (writes turned into the equivalent find). */
  command: Record<string, unknown>;
  /** What the app sent, for messages. */
  summary: string;
}

export interface PlanReport {
  query: RecordedQuery;
  stages: string[];
  indexes: string[];
  /** The most key ranges one index scan of the plan starts: the product of its fields' `$in` sizes. */
  scanRanges: number;
}

/**
 * An index scan bounded by two `$in` lists starts one range per pair of values (on DocumentDB
 * each is a descent of the RUM index): a type list times a reference list read thousands of
 * blocks for a few matches. More ranges than this in one scan is a violation.
 */
export const MAX_SCAN_RANGES = 1000;

/**
 * Ranges one index scan starts: on MongoDB the product of its fields' interval counts
 * (`indexBounds`), on DocumentDB of its `$in` conditions' sizes (`indexFilterSet`).
 */
function scanRangesOf(node: Record<string, unknown>): number {
  let ranges = 1;
  const bounds = node.indexBounds as Record<string, unknown[]> | undefined;
  if (bounds) for (const intervals of Object.values(bounds)) ranges *= Math.max(1, intervals.length);
  const conditions = node.indexFilterSet as Array<Record<string, Record<string, unknown>>> | undefined;
  for (const condition of conditions ?? []) {
    for (const values of Object.values(condition.$in ?? {}))
      if (Array.isArray(values)) ranges *= values.length;
  }
  return ranges;
}

function asFinds(name: string, command: Record<string, any>): Array<Record<string, unknown>> {
  const collection = command[name] as string;
  switch (name) {
    case 'delete':
      return (command.deletes as Array<{ q: object }>).map((d) => ({ find: collection, filter: d.q }));
    case 'update':
      return (command.updates as Array<{ q: object }>).map((u) => ({ find: collection, filter: u.q }));
    case 'findAndModify':
      return [{ find: collection, filter: command.query, ...(command.sort ? { sort: command.sort } : {}) }];
    default: {
      // Strip what the driver adds that `explain` refuses (session, cluster time, read preference).
      const kept: Record<string, unknown> = {};
      for (const [key, value] of Object.entries(command))
        if (!key.startsWith('$') && key !== 'lsid' && key !== 'txnNumber') kept[key] = value;
      return [kept];
    }
  }
}

/** Records the query commands sent on `connection` while `run` executes. */
export async function recordQueries(
  connection: Connection,
  run: () => Promise<unknown>,
): Promise<RecordedQuery[]> {
  const client = connection.getClient();
  const recorded: RecordedQuery[] = [];
  const listener = (event: mongo.CommandStartedEvent): void => {
    if (!QUERY_COMMANDS.has(event.commandName)) return;
    const command = event.command as Record<string, any>;
    for (const find of asFinds(event.commandName, command)) {
      recorded.push({
        collection: String(command[event.commandName]),
        command: find,
        summary: `${event.commandName} ${JSON.stringify(find).slice(0, 400)}`,
      });
    }
  };
  client.on('commandStarted', listener);
  try {
    await run();
  } finally {
    client.off('commandStarted', listener);
  }
  return recorded;
}

interface CollectedPlan {
  stages: string[];
  indexes: string[];
  scanRanges: number;
}

function collectStages(node: unknown, plan: CollectedPlan): void {
  if (Array.isArray(node)) {
    for (const item of node) collectStages(item, plan);
    return;
  }
  if (typeof node !== 'object' || node === null) return;
  const record = node as Record<string, unknown>;
  if (typeof record.stage === 'string') {
    plan.stages.push(record.stage);
    if (typeof record.indexName === 'string') {
      plan.indexes.push(record.indexName);
      plan.scanRanges = Math.max(plan.scanRanges, scanRangesOf(record));
    }
  }
  for (const [key, value] of Object.entries(record)) {
    if (key === 'rejectedPlans') continue;
    collectStages(value, plan);
  }
}

/** The winning plan(s) of one explain answer (find, count, distinct, aggregate). */
function winningPlans(explain: Record<string, any>): unknown[] {
  const plans: unknown[] = [];
  const visit = (node: unknown): void => {
    if (Array.isArray(node)) return node.forEach(visit);
    if (typeof node !== 'object' || node === null) return;
    for (const [key, value] of Object.entries(node as Record<string, unknown>)) {
      if (key === 'winningPlan') plans.push(value);
      else if (key !== 'rejectedPlans' && key !== 'command') visit(value);
    }
  };
  visit(explain);
  return plans;
}

/** Explains one recorded query; `hint` names an index to prove it can serve the query's shape. */
export async function explainQuery(
  connection: Connection,
  query: RecordedQuery,
  hint?: string,
): Promise<PlanReport> {
  const command = hint ? { ...query.command, hint } : query.command;
  const explain = (await connection.db!.command({
    explain: command,
    verbosity: 'queryPlanner',
  })) as Record<string, any>;
  const plan: CollectedPlan = { stages: [], indexes: [], scanRanges: 0 };
  collectStages(winningPlans(explain), plan);
  return { query, ...plan };
}

/**
 * Failures of the index-scan rule among `reports`: a collection scan anywhere, a plan that
 * reads no index (an `EOF` plan, a query MongoDB proves empty without reading, passes), or an
 * index scan of more than MAX_SCAN_RANGES ranges.
 */
export function scanViolations(reports: readonly PlanReport[]): string[] {
  return reports
    .filter((report) => {
      if (report.stages.includes('COLLSCAN')) return true;
      if (report.scanRanges > MAX_SCAN_RANGES) return true;
      if (report.stages.length === 1 && report.stages[0] === 'EOF') return false;
      return !report.stages.some((stage) => INDEX_STAGES.has(stage));
    })
    .map((report) => `${report.stages.join('>')} (${report.scanRanges} ranges) :: ${report.query.summary}`);
}

/** Whether a plan sorts its input in memory (a `SORT` stage) rather than reading an index in order. */
export function sortsInMemory(report: PlanReport): boolean {
  return report.stages.includes('SORT');
}

/**
 * Index keys the query read when run (`executionStats`, the most of any one stage): a page read
 * in index order reads about its size, a sorted one every match.
 */
export async function keysRead(connection: Connection, query: RecordedQuery): Promise<number> {
  const explain = (await connection.db!.command({
    explain: query.command,
    verbosity: 'executionStats',
  })) as Record<string, any>;
  let most = 0;
  const visit = (node: unknown): void => {
    if (Array.isArray(node)) return node.forEach(visit);
    if (typeof node !== 'object' || node === null) return;
    for (const [key, value] of Object.entries(node as Record<string, unknown>)) {
      if (key === 'totalKeysExamined' && typeof value === 'number') most = Math.max(most, value);
      else if (key !== 'rejectedPlans' && key !== 'command') visit(value);
    }
  };
  visit(explain);
  return most;
}
