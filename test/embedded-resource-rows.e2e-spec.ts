import { ownDocumentDbForSuite } from '@app/testing/own-documentdb';
import { resourceRowStorageSql } from '../src/database/resource-row-storage';

/**
 * The embedded engine keeps `resources` rows up to a page uncompressed, so that the conditions and
 * sort keys a search evaluates on a stored document do not decompress it each time
 * (src/database/resource-row-storage.ts). Its own DocumentDB, started as `npm start` starts it.
 */
describe('embedded DocumentDB: resources rows stored uncompressed (e2e)', () => {
  const own = ownDocumentDbForSuite('fhir-rows-');

  /** Each collection's table setting and how its one document is stored (null: not compressed). */
  async function storage(database: string, collection: string) {
    const id = (
      await own.db.adminSql(
        `SELECT collection_id FROM documentdb_api_catalog.collections WHERE database_name = '${database}' AND collection_name = '${collection}'`,
      )
    ).trim();
    const table = `documentdb_data.documents_${id}`;
    const options = (
      await own.db.adminSql(
        `SELECT coalesce(array_to_string(reloptions, ','), '') FROM pg_class WHERE oid = '${table}'::regclass`,
      )
    ).trim();
    const compression = (
      await own.db.adminSql(
        `SELECT coalesce(pg_column_compression(document), 'none') FROM ${table} ORDER BY object_id`,
      )
    )
      .trim()
      .split('\n');
    return { options, compression };
  }
  const text = (bytes: number) =>
    Array.from({ length: bytes / 8 }, (_, i) => i.toString(16).padStart(8, '0')).join('');

  it('a resources collection made after the start stores a 5 KB document plain and a 40 KB one compressed; other collections compress as PostgreSQL does; both read back whole', async () => {
    const db = own.client.db('rows1');
    await db.collection('resources').insertMany([
      { _id: 'a' as any, json: text(5_000) },
      { _id: 'b' as any, json: text(40_000) },
    ]);
    await db.collection('resource_history').insertOne({ _id: 'a' as any, json: text(5_000) });
    expect(await storage('rows1', 'resources')).toEqual({
      options: 'toast_tuple_target=8160',
      compression: ['none', 'lz4'],
    });
    expect(await storage('rows1', 'resource_history')).toEqual({ options: '', compression: ['lz4'] });
    const back = await db
      .collection('resources')
      .find({}, { sort: { _id: 1 } })
      .toArray();
    expect(back.map((d) => (d.json as string).length)).toEqual([5_000, 40_000]);
  });

  it('switching to compressed resets the existing tables and stops setting new ones; switching back sets them again', async () => {
    const before = own.client.db('rows2');
    await before.collection('resources').insertOne({ _id: 'a' as any, json: text(5_000) });
    await own.db.adminSql(resourceRowStorageSql('compressed'));
    expect((await storage('rows2', 'resources')).options).toBe('');
    await before.collection('resources').insertOne({ _id: 'b' as any, json: text(5_000) });
    // rows keep the storage they were written with
    expect((await storage('rows2', 'resources')).compression).toEqual(['none', 'lz4']);
    await own.client
      .db('rows3')
      .collection('resources')
      .insertOne({ _id: 'a' as any, json: text(5_000) });
    expect(await storage('rows3', 'resources')).toEqual({ options: '', compression: ['lz4'] });

    await own.db.adminSql(resourceRowStorageSql('plain'));
    expect((await storage('rows2', 'resources')).options).toBe('toast_tuple_target=8160');
    expect((await storage('rows3', 'resources')).options).toBe('toast_tuple_target=8160');
  });
});
