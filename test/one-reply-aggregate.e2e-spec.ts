import { mongo } from 'mongoose';
import { recordedScratchDatabase, type RecordedDatabase } from '@app/testing';
import { aggregateInOneReply } from '../src/database/one-reply-aggregate';

interface Doc {
  _id: string;
  c: string;
  n: number;
  json: string;
}

/** The aggregate by command (src/database/one-reply-aggregate.ts) answers as the driver's cursor does. */
describe('aggregateInOneReply', () => {
  let recorded: RecordedDatabase;
  let db: mongo.Db;
  let docs: mongo.Collection<mongo.Document>;

  beforeAll(async () => {
    recorded = await recordedScratchDatabase('one_reply');
    db = recorded.db;
    docs = db.collection('docs');
    await db.collection<Doc>('docs').insertMany(
      Array.from({ length: 7 }, (_, n): Doc => ({
        _id: `d${n}`,
        c: n % 2 ? 'x' : 'y',
        n,
        json: `{"n":${n},"é":"ü"}`,
      })),
    );
    await docs.createIndex({ c: 1, n: 1 }, { name: 'c_n' });
  });

  afterAll(async () => recorded?.close());

  const sent = async <T>(read: () => Promise<T>) => {
    const { answer, commands } = await recorded.sent(read);
    return { answer, names: commands.map((event) => event.commandName), commands };
  };

  const pipeline = [{ $match: { c: 'x' } }, { $sort: { n: -1 } }, { $limit: 2 }, { $project: { c: 0 } }];

  it('answers the rows the cursor answers, in one aggregate command with a deadline and no cursor left', async () => {
    const options = { hint: 'c_n', enableUtf8Validation: false };
    const byCommand = await sent(() => aggregateInOneReply(docs, pipeline, options, 2));
    const byCursor = await sent(() => docs.aggregate(pipeline, options).toArray());
    expect(byCommand.answer).toEqual(byCursor.answer);
    expect(byCommand.answer).toEqual([
      { _id: 'd5', n: 5, json: '{"n":5,"é":"ü"}' },
      { _id: 'd3', n: 3, json: '{"n":3,"é":"ü"}' },
    ]);
    expect(byCommand.names).toEqual(['aggregate']);
    const command = byCommand.commands[0].command;
    expect(command).toMatchObject({ aggregate: 'docs', pipeline, cursor: { batchSize: 3 }, hint: 'c_n' });
    // the client's deadline (timeoutMS) reaches the engine as it does for the cursor
    expect(typeof command.maxTimeMS).toBe('number');
    expect(typeof byCursor.commands[0].command.maxTimeMS).toBe('number');
  });

  it('answers no rows when nothing matches', async () => {
    const none = [{ $match: { c: 'z' } }, { $limit: 5 }];
    expect(await aggregateInOneReply(docs, none, {}, 5)).toEqual([]);
  });

  it('closes the cursor a reply leaves open and reads every row through the driver', async () => {
    const all = [{ $match: { c: { $in: ['x', 'y'] } } }, { $sort: { n: 1 } }];
    const read = await sent(() => aggregateInOneReply(docs, all, {}, 1));
    expect(read.answer.map((row) => row.n)).toEqual([0, 1, 2, 3, 4, 5, 6]);
    expect(read.names.slice(0, 3)).toEqual(['aggregate', 'killCursors', 'aggregate']);
    expect(read.commands[0].command.cursor).toEqual({ batchSize: 2 });
  });

  it('leaves other options and read concerns to the cursor', async () => {
    const withComment = await sent(() => aggregateInOneReply(docs, pipeline, { comment: 'why' }, 2));
    expect(withComment.answer).toHaveLength(2);
    expect(withComment.commands[0].command.cursor).toEqual({});
    expect(withComment.commands[0].command.comment).toBe('why');
    const local = db.collection('docs', { readConcern: { level: 'local' } });
    const withConcern = await sent(() => aggregateInOneReply(local, pipeline, {}, 2));
    expect(withConcern.answer).toHaveLength(2);
    expect(withConcern.commands[0].command.readConcern).toEqual({ level: 'local' });
  });

  it('fails as the cursor fails', async () => {
    const bad = [{ $match: { c: 'x' } }, { $bad: 1 }];
    const byCursor = await docs
      .aggregate(bad)
      .toArray()
      .catch((error: Error) => error);
    const byCommand = await aggregateInOneReply(docs, bad, {}, 1).catch((error: Error) => error);
    expect(byCursor).toBeInstanceOf(mongo.MongoServerError);
    expect(byCommand).toBeInstanceOf(mongo.MongoServerError);
    expect((byCommand as mongo.MongoServerError).code).toBe((byCursor as mongo.MongoServerError).code);
  });
});
