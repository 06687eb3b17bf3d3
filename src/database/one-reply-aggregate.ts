import { mongo } from 'mongoose';

/** The options the command form passes on; any other option takes the driver's cursor. */
const PLAIN_OPTIONS = new Set(['hint', 'enableUtf8Validation']);

/** Whether a reply's cursor id names an open cursor (0: the rows ended in this reply). */
function cursorOpen(id: number | mongo.Long): boolean {
  return typeof id === 'number' ? id !== 0 : !id.isZero();
}

/**
 * `collection.aggregate(pipeline, options).toArray()` for a pipeline whose rows are known to be at
 * most `rows`, sent as the one `aggregate` command it stands for through `Db.command`, its first
 * batch asked one row larger than that (the engine then sees the end before the batch fills and
 * leaves no cursor open): the rows come in that one reply, without the AggregationCursor the
 * driver builds around the command (its construction, options resolved again, initialisation,
 * clean-up and close events). The same command on the wire (the client's deadline adds
 * `maxTimeMS`, an implicit session its `lsid`), the same read preference, the same errors; less
 * work per query in the server and in the engine (docs/storage.md "Search pages by command").
 * Should a reply still leave a cursor open (more rows than said, or a first batch cut at the
 * engine's 16 MB), that cursor is closed and the pipeline read again through the driver's cursor,
 * which fetches every batch. Other options, a collection with a read concern of its own, or a
 * collection that is not the driver's (Mongoose's wrapper) take the cursor from the start.
 */
export async function aggregateInOneReply<R extends mongo.Document>(
  collection: mongo.Collection<mongo.Document>,
  pipeline: readonly object[],
  options: mongo.AggregateOptions,
  rows: number,
): Promise<R[]> {
  const db = (collection as unknown as { db?: unknown }).db;
  const plain = Object.keys(options).every((key) => PLAIN_OPTIONS.has(key));
  const byCursor = () => collection.aggregate<R>([...pipeline] as mongo.Document[], options).toArray();
  if (!(db instanceof mongo.Db) || !plain || collection.readConcern !== undefined) return byCursor();
  const { hint, enableUtf8Validation } = options;
  const reply = await db.command(
    {
      aggregate: collection.collectionName,
      pipeline,
      cursor: { batchSize: Math.max(1, rows + 1) },
      ...(hint === undefined ? {} : { hint }),
    },
    {
      readPreference: collection.readPreference,
      ...(enableUtf8Validation === undefined ? {} : { enableUtf8Validation }),
    },
  );
  const cursor = reply.cursor as { id: number | mongo.Long; firstBatch: R[] };
  if (!cursorOpen(cursor.id)) return cursor.firstBatch;
  await db
    .command({ killCursors: collection.collectionName, cursors: [mongo.Long.fromValue(cursor.id)] })
    .catch(() => undefined); // the engine closes an abandoned cursor after its idle timeout anyway
  return byCursor();
}
