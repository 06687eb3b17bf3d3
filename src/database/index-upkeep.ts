/**
 * Rebuilds the indexes of the embedded DocumentDB's collections once their rows have turned over
 * (docs/memory.md "Index growth under churn").
 *
 * Every index DocumentDB builds but `_id` is a RUM index, and a RUM index keeps every distinct key
 * it was ever given: deleting or updating a row empties the key's posting list, but VACUUM neither
 * removes the key from the entry tree nor reuses its page. Keys with a unique part (the resource
 * key, lastUpdated) are new with every write, so such an index grows with the number of writes,
 * not with the data: under the soak's creates and purges (a store of ~27,000 live resources) the
 * five composite indexes of `resources` reached 1.27 GB in 90 minutes against a 69 MB table, and
 * the database's CPU per request grew with them. `REINDEX TABLE CONCURRENTLY` builds them again
 * from the live rows without blocking reads or writes; the engine has no other way (the gateway
 * has no `reIndex` command). A table is rebuilt once the rows updated or deleted since its last
 * rebuild reach its live rows (so the rebuilds cost at most about as much as the writes that made
 * them necessary), checked every few minutes by the process that owns the engine.
 */

/** A collection's table in the engine and its PostgreSQL row counters (pg_stat_user_tables). */
export interface TableChurn {
  table: string;
  liveRows: number;
  /** Rows updated or deleted since statistics began (cumulative). */
  changedRows: number;
}

export interface IndexUpkeepPolicy {
  /** How often the counters are checked (seconds). */
  everySeconds: number;
  /** Fewer changed rows than this never start a rebuild (small tables cost nothing to keep). */
  minChangedRows: number;
}

export const DEFAULT_INDEX_UPKEEP: IndexUpkeepPolicy = { everySeconds: 600, minChangedRows: 20_000 };

/** The tables of DocumentDB's collections (documentdb_data.documents_<collection id>). */
const TABLE_NAME = /^documents_\d+$/;

export const TABLE_CHURN_SQL =
  "SELECT relname || ' ' || n_live_tup || ' ' || (n_tup_upd + n_tup_del) FROM pg_stat_user_tables " +
  "WHERE schemaname = 'documentdb_data' AND relname ~ '^documents_[0-9]+$'";

export function parseTableChurn(output: string): TableChurn[] {
  return output
    .split('\n')
    .map((line) => line.trim().split(' '))
    .filter(
      ([table, live, changed]) => TABLE_NAME.test(table ?? '') && live !== undefined && changed !== undefined,
    )
    .map(([table, live, changed]) => ({ table, liveRows: Number(live), changedRows: Number(changed) }));
}

/**
 * The tables to rebuild now: changed rows since the last rebuild (`since`, the counter then; none
 * yet: since statistics began) at least their live rows and at least `minChangedRows`.
 */
export function tablesToRebuild(
  tables: readonly TableChurn[],
  since: ReadonlyMap<string, number>,
  minChangedRows: number,
): string[] {
  return tables
    .filter((t) => {
      // a counter below the last reading: the statistics were reset, count from zero
      const before = since.get(t.table) ?? 0;
      const changed = t.changedRows >= before ? t.changedRows - before : t.changedRows;
      return changed >= minChangedRows && changed >= t.liveRows;
    })
    .map((t) => t.table);
}

export function rebuildSql(table: string): string {
  if (!TABLE_NAME.test(table)) throw new Error(`not a collection table: ${table}`);
  return `REINDEX TABLE CONCURRENTLY documentdb_data.${table}`;
}

/**
 * Indexes a rebuild left behind when it was cut off (the engine stopped, a statement failed):
 * `REINDEX … CONCURRENTLY` builds `<name>_ccnew` beside the old index and drops `<name>_ccold`
 * after the swap, and an interruption leaves either one invalid — unused by queries, yet written
 * with every row.
 */
export const LEFTOVER_INDEXES_SQL =
  'SELECT c.relname FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid ' +
  "JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = 'documentdb_data' " +
  "AND NOT i.indisvalid AND c.relname ~ '_cc(new|old)[0-9]*$'";

const LEFTOVER_NAME = /^\w+_cc(new|old)\d*$/;

export function dropLeftoverSql(index: string): string {
  if (!LEFTOVER_NAME.test(index)) throw new Error(`not a rebuild's leftover: ${index}`);
  return `DROP INDEX CONCURRENTLY IF EXISTS documentdb_data.${index}`;
}

/** What the upkeep needs of the engine: superuser SQL. */
export type AdminSql = (sql: string) => Promise<string>;

export class IndexUpkeep {
  private readonly since = new Map<string, number>();
  private running = false;

  constructor(
    private readonly sql: AdminSql,
    private readonly log: (message: string) => void,
    private readonly policy: IndexUpkeepPolicy = DEFAULT_INDEX_UPKEEP,
  ) {}

  /** One check: rebuilds what turned over; returns the tables rebuilt (none while one runs). */
  async check(): Promise<string[]> {
    if (this.running) return [];
    this.running = true;
    try {
      for (const index of (await this.sql(LEFTOVER_INDEXES_SQL)).split('\n').map((l) => l.trim()))
        if (index) await this.sql(dropLeftoverSql(index));
      const tables = parseTableChurn(await this.sql(TABLE_CHURN_SQL));
      const rebuilt: string[] = [];
      for (const table of tablesToRebuild(tables, this.since, this.policy.minChangedRows)) {
        const started = Date.now();
        await this.sql(rebuildSql(table));
        this.since.set(table, tables.find((t) => t.table === table)!.changedRows);
        this.log(`embedded database: rebuilt the indexes of ${table} in ${Date.now() - started} ms`);
        rebuilt.push(table);
      }
      return rebuilt;
    } finally {
      this.running = false;
    }
  }

  /** Checks every `everySeconds` until stopped; a failed check is logged and the next one runs. */
  start(): () => void {
    const timer = setInterval(() => {
      this.check().catch((e: Error) => this.log(`embedded database: index upkeep failed: ${e.message}`));
    }, this.policy.everySeconds * 1000);
    timer.unref();
    return () => clearInterval(timer);
  }
}
