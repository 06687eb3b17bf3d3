import { mongo } from 'mongoose';
import { recordedScratchDatabase, type RecordedDatabase } from '@app/testing';
import { findOneByCommand } from '../src/database/point-read';

interface Doc {
  _id: string;
  c: string;
  u: number;
  json: string;
  idx?: object;
  lu: Date;
}

/** The point read by command (src/database/point-read.ts) answers as the driver's findOne does. */
describe('findOneByCommand', () => {
  let recorded: RecordedDatabase;
  let db: mongo.Db;

  beforeAll(async () => {
    recorded = await recordedScratchDatabase('point_read');
    db = recorded.db;
    await db.collection<Doc>('docs').insertMany([
      { _id: 'a', c: 'x', u: 1, json: '{"é":"ü"}', idx: { big: [1, 2, 3] }, lu: new Date(0) },
      { _id: 'b', c: 'x', u: 2, json: '{}', idx: {}, lu: new Date(1) },
    ]);
  });

  afterAll(async () => recorded?.close());

  const sent = async <T>(read: () => Promise<T>) => {
    const { answer, commands } = await recorded.sent(read);
    return { answer, finds: commands.filter((event) => event.commandName === 'find') };
  };

  it('finds the document findOne finds, with the projection, in one find command with a deadline', async () => {
    const docs = db.collection<Doc>('docs');
    const filter = { _id: 'a', c: 'x', u: 1 };
    const byCommand = await sent(() => findOneByCommand(docs, filter, { projection: { idx: 0 } }));
    const byCursor = await sent(() => docs.findOne(filter, { projection: { idx: 0 } }));
    expect(byCommand.answer).toEqual(byCursor.answer);
    expect(byCommand.answer).toEqual({ _id: 'a', c: 'x', u: 1, json: '{"é":"ü"}', lu: new Date(0) });
    expect(byCommand.finds).toHaveLength(1);
    const command = byCommand.finds[0].command;
    expect(command).toMatchObject({
      find: 'docs',
      filter,
      projection: { idx: 0 },
      limit: 1,
      singleBatch: true,
    });
    // the client's deadline (timeoutMS) reaches the engine as it does for findOne
    expect(typeof command.maxTimeMS).toBe('number');
    expect(typeof byCursor.finds[0].command.maxTimeMS).toBe('number');
  });

  it('answers null when nothing matches, and without a projection the whole document', async () => {
    const docs = db.collection<Doc>('docs');
    expect(await findOneByCommand(docs, { _id: 'b', u: 1 })).toBeNull();
    expect(await findOneByCommand(docs, { _id: 'b' })).toEqual(await docs.findOne({ _id: 'b' }));
  });

  it('leaves other options and read concerns to findOne', async () => {
    const docs = db.collection<Doc>('docs');
    const sorted = await sent(() => findOneByCommand(docs, { c: 'x' }, { sort: { lu: -1 } }));
    expect(sorted.answer?._id).toBe('b');
    // findOne's own command: its sort formatted by the driver (a Map)
    expect(sorted.finds[0].command.sort).toEqual(new Map([['lu', -1]]));
    const local = db.collection<Doc>('docs', { readConcern: { level: 'local' } });
    const withConcern = await sent(() => findOneByCommand(local, { _id: 'a' }));
    expect(withConcern.answer?._id).toBe('a');
    expect(withConcern.finds[0].command.readConcern).toEqual({ level: 'local' });
  });

  it('fails as findOne fails', async () => {
    const docs = db.collection<Doc>('docs');
    const bad = { $bad: 1 } as mongo.Filter<Doc>;
    const byCursor = await docs.findOne(bad).catch((error: Error) => error);
    const byCommand = await findOneByCommand(docs, bad).catch((error: Error) => error);
    expect(byCursor).toBeInstanceOf(mongo.MongoServerError);
    expect(byCommand).toBeInstanceOf(mongo.MongoServerError);
    expect((byCommand as mongo.MongoServerError).code).toBe((byCursor as mongo.MongoServerError).code);
  });
});
