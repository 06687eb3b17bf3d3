import {
  dropLeftoverSql,
  IndexUpkeep,
  LEFTOVER_INDEXES_SQL,
  parseTableChurn,
  rebuildSql,
  tablesToRebuild,
  TABLE_CHURN_SQL,
} from './index-upkeep';

describe('index upkeep: which tables are rebuilt', () => {
  it('reads the counters psql prints and ignores other lines', () => {
    expect(parseTableChurn('documents_3 27000 812000\ndocuments_18 20 4\n\nsomething else\n')).toEqual([
      { table: 'documents_3', liveRows: 27000, changedRows: 812000 },
      { table: 'documents_18', liveRows: 20, changedRows: 4 },
    ]);
  });

  it('rebuilds a table once its changed rows since the last rebuild reach its live rows and the minimum', () => {
    const tables = [
      { table: 'documents_3', liveRows: 27_000, changedRows: 812_000 },
      { table: 'documents_5', liveRows: 500_000, changedRows: 100_000 },
      { table: 'documents_7', liveRows: 10, changedRows: 4_000 },
    ];
    // documents_5 changed a fifth of its rows; documents_7 fewer than the minimum
    expect(tablesToRebuild(tables, new Map(), 20_000)).toEqual(['documents_3']);
    // since its last rebuild documents_3 changed 12,000 rows: fewer than it holds
    expect(tablesToRebuild(tables, new Map([['documents_3', 800_000]]), 5_000)).toEqual([]);
    // statistics reset (counter below the last reading): counted from zero
    expect(tablesToRebuild(tables, new Map([['documents_3', 900_000]]), 20_000)).toEqual(['documents_3']);
  });

  it('names only collection tables in its statement', () => {
    expect(rebuildSql('documents_12')).toBe('REINDEX TABLE CONCURRENTLY documentdb_data.documents_12');
    expect(() => rebuildSql('documents_1; DROP TABLE x')).toThrow(/not a collection table/);
  });

  it('rebuilds, then counts from the counter it saw, and logs each rebuild', async () => {
    let changed = 50_000;
    const statements: string[] = [];
    const logs: string[] = [];
    const upkeep = new IndexUpkeep(
      async (sql) => {
        statements.push(sql);
        return sql === TABLE_CHURN_SQL ? `documents_4 10000 ${changed}` : '';
      },
      (m) => logs.push(m),
      { everySeconds: 600, minChangedRows: 1000 },
    );
    expect(await upkeep.check()).toEqual(['documents_4']);
    changed += 5_000; // half the table since: not yet
    expect(await upkeep.check()).toEqual([]);
    changed += 5_000;
    expect(await upkeep.check()).toEqual(['documents_4']);
    expect(statements.filter((s) => s.startsWith('REINDEX'))).toHaveLength(2);
    expect(logs).toEqual([
      expect.stringMatching(/rebuilt the indexes of documents_4/),
      expect.stringMatching(/rebuilt the indexes of documents_4/),
    ]);
  });

  it('first drops what an interrupted rebuild left behind, naming only such indexes', async () => {
    const statements: string[] = [];
    const upkeep = new IndexUpkeep(
      async (sql) => {
        statements.push(sql);
        return sql === LEFTOVER_INDEXES_SQL ? 'documents_rum_index_4_ccnew\ncollection_pk_3_ccold1\n' : '';
      },
      () => undefined,
      { everySeconds: 600, minChangedRows: 1000 },
    );
    expect(await upkeep.check()).toEqual([]);
    expect(statements).toEqual([
      LEFTOVER_INDEXES_SQL,
      'DROP INDEX CONCURRENTLY IF EXISTS documentdb_data.documents_rum_index_4_ccnew',
      'DROP INDEX CONCURRENTLY IF EXISTS documentdb_data.collection_pk_3_ccold1',
      TABLE_CHURN_SQL,
    ]);
    expect(() => dropLeftoverSql('documents_rum_index_4')).toThrow(/not a rebuild's leftover/);
    expect(() => dropLeftoverSql('x_ccnew; DROP TABLE y')).toThrow(/not a rebuild's leftover/);
  });
});
