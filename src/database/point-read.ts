import { mongo } from 'mongoose';

/**
 * `collection.findOne(filter, options)` sent as the one `find` command it stands for (`limit: 1`,
 * `singleBatch: true`) through `Db.command`, without the cursor the driver builds around that
 * command for `findOne` (a FindCursor, its initialisation and clean-up, its options resolved once
 * more): the same command on the wire (the client's deadline adds `maxTimeMS` to any command, an
 * implicit session its `lsid`), the same read preference, the same errors, less work per read in
 * the server (docs/storage.md "Reads measured"). Only a projection is passed this way; other
 * options, a collection with a read concern of its own, or a collection that is not the driver's
 * (Mongoose's wrapper) take `findOne`.
 */
export async function findOneByCommand<T extends mongo.Document>(
  collection: mongo.Collection<T>,
  filter: mongo.Filter<T>,
  options: mongo.FindOptions = {},
): Promise<T | null> {
  const db = (collection as unknown as { db?: unknown }).db;
  const plain = Object.keys(options).every((key) => key === 'projection');
  if (!(db instanceof mongo.Db) || !plain || collection.readConcern !== undefined) {
    return collection.findOne<T>(filter, options);
  }
  const reply = await db.command(
    {
      find: collection.collectionName,
      filter,
      ...(options.projection ? { projection: options.projection } : {}),
      limit: 1,
      singleBatch: true,
    },
    { readPreference: collection.readPreference },
  );
  const firstBatch = (reply.cursor as { firstBatch: T[] }).firstBatch;
  return firstBatch.length > 0 ? firstBatch[0] : null;
}
