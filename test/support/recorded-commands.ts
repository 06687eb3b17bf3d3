import { randomBytes } from 'node:crypto';
import { mongo } from 'mongoose';

/** A scratch database on the test engine whose client records every command it sends. */
export interface RecordedDatabase {
  db: mongo.Db;
  /** Runs `read` and returns its answer with the commands sent meanwhile, in order. */
  sent<T>(read: () => Promise<T>): Promise<{ answer: T; commands: mongo.CommandStartedEvent[] }>;
  /** Drops the scratch database and closes the client. */
  close(): Promise<void>;
}

/**
 * For tests of reads sent as commands (src/database/point-read.ts, one-reply-aggregate.ts): the
 * client has a deadline (`timeoutMS`, as the app's has) so the tests can see it reach the engine.
 */
export async function recordedScratchDatabase(prefix: string): Promise<RecordedDatabase> {
  const client = await mongo.MongoClient.connect(process.env.TEST_MONGO_URL!, {
    timeoutMS: 30_000,
    monitorCommands: true,
  });
  const commands: mongo.CommandStartedEvent[] = [];
  client.on('commandStarted', (event) => commands.push(event));
  const db = client.db(`${prefix}_${randomBytes(4).toString('hex')}`);
  return {
    db,
    sent: async (read) => {
      commands.length = 0;
      const answer = await read();
      return { answer, commands: [...commands] };
    },
    close: async () => {
      await db.dropDatabase().catch(() => undefined);
      await client.close();
    },
  };
}
