import { ownDocumentDbForSuite } from '@app/testing/own-documentdb';
import { IndexUpkeep } from '../src/database/index-upkeep';

/**
 * The embedded engine's RUM indexes keep every key they were given; the upkeep rebuilds a
 * collection's indexes once its rows turned over (src/database/index-upkeep.ts). Its own DocumentDB.
 */
describe('embedded DocumentDB: indexes of a collection that turned over are rebuilt (e2e)', () => {
  const own = ownDocumentDbForSuite('fhir-upkeep-');

  it('an index of unique keys grows with every write although the rows stay as many; the rebuild shrinks it and keeps every row findable', async () => {
    const docs = own.client.db('upkeep').collection<{ _id: string; u: number; t: string }>('docs');
    await docs.createIndex({ u: 1, t: 1, _id: 1 }, { name: 'user_type_id' });
    let n = 0;
    const batch = () =>
      Array.from({ length: 2000 }, () => ({ _id: `r4|c|Observation|${n++}`, u: 1, t: 'Observation' }));
    const indexBytes = async () =>
      (await own.client.db('upkeep').command({ collStats: 'docs' })).indexSizes.user_type_id as number;
    await docs.insertMany(batch());
    const fresh = await indexBytes();
    // five times over: every row replaced by a new one
    for (let round = 0; round < 5; round++) {
      const old = (await docs.find({}, { projection: { _id: 1 } }).toArray()).map((d) => d._id);
      await docs.insertMany(batch());
      await docs.deleteMany({ _id: { $in: old } });
    }
    await own.db.adminSql('VACUUM');
    const churned = await indexBytes();
    expect(churned).toBeGreaterThan(3 * fresh);

    const logs: string[] = [];
    const upkeep = new IndexUpkeep(
      (sql) => own.db.adminSql(sql),
      (m) => logs.push(m),
      {
        everySeconds: 600,
        minChangedRows: 1000,
      },
    );
    // the row counters reach the statistics within a second or so
    let rebuilt: string[] = [];
    for (let i = 0; i < 40 && rebuilt.length === 0; i++) {
      rebuilt = await upkeep.check();
      if (rebuilt.length === 0) await new Promise((r) => setTimeout(r, 250));
    }
    expect(rebuilt).toHaveLength(1);
    expect(logs[0]).toMatch(/rebuilt the indexes of documents_\d+/);
    expect(await indexBytes()).toBeLessThan(2 * fresh);
    expect(await docs.countDocuments({ u: 1, t: 'Observation' })).toBe(2000);
    expect(await docs.findOne({ u: 1, t: 'Observation', _id: `r4|c|Observation|${n - 1}` })).not.toBeNull();
    // nothing turned over since: the next check rebuilds nothing
    expect(await upkeep.check()).toEqual([]);
  }, 180_000);
});
