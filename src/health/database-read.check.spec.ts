import { EventEmitter } from 'events';
import type { Connection } from 'mongoose';
import type { DatabaseLiveness } from '../database/database-liveness';
import { DatabaseReadCheck } from './database-read.check';

/** A connection whose reads answer as `answer` says (a stand-in for the driver). */
function fakeConnection(answer: () => Promise<unknown>) {
  const client = new EventEmitter();
  const reads = { count: 0 };
  const connection = {
    getClient: () => client,
    db: {
      collection: () => ({
        findOne: () => {
          reads.count += 1;
          return answer();
        },
      }),
    },
  } as unknown as Connection;
  return { connection, client, reads };
}

function check(answer: () => Promise<unknown>) {
  const fake = fakeConnection(answer);
  const c = new DatabaseReadCheck(fake.connection, { probeTimeoutMs: 50 } as DatabaseLiveness);
  c.onModuleInit();
  return { c, ...fake };
}

describe('DatabaseReadCheck', () => {
  it('reads afresh for a prober asking now and then', async () => {
    const { c, reads } = check(() => Promise.resolve({ _id: 1 }));
    expect(await c.problem()).toBeUndefined();
    expect(await c.problem()).toBeUndefined();
    expect(reads.count).toBe(2);
  });

  it('under load, reuses one read until the driver loses the server', async () => {
    const { c, reads, client } = check(() => Promise.resolve(null));
    for (let i = 0; i < 30; i++) await c.problem();
    expect(reads.count).toBeLessThan(15);
    const before = reads.count;
    client.emit('connectionPoolCleared');
    await c.problem();
    expect(reads.count).toBe(before + 1);
  });

  it('concurrent checks share one read', async () => {
    const { c, reads } = check(() => new Promise((r) => setTimeout(() => r(null), 10)));
    await Promise.all([c.problem(), c.problem(), c.problem()]);
    expect(reads.count).toBe(1);
  });

  it('names the driver error, and a read that never answers fails at its deadline', async () => {
    const refused = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:1'), {
      name: 'MongoServerSelectionError',
    });
    expect((await check(() => Promise.reject(refused)).c.problem())?.name).toBe('MongoServerSelectionError');
    const hung = await check(() => new Promise(() => undefined)).c.problem();
    expect(hung?.message).toBe('no answer within 50 ms');
  });
});
