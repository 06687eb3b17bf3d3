import { randomBytes } from 'crypto';
import type { mongo } from 'mongoose';

/** The two kinds of sharded engine `store shard` knows (docs/scaling.md). */
export type ShardEngine = 'mongodb' | 'documentdb-distributed';

/** The engine cannot shard (or has nothing to spread over): the operator gets `message` and exit 1. */
export class ShardRefusal extends Error {}

/**
 * Which kind of sharded engine `client` talks to, or a refusal saying why it cannot shard. A router
 * answers `hello` with `isdbgrid` (mongos, and the DocumentDB gateway, single node included);
 * mongos lists its shards in `config.shards`; DocumentDB lists none, so a scratch collection is
 * sharded and its chunks looked at: the single-node engine accepts `shardCollection` but keeps every
 * chunk on one `defaultShard`, where sharding would only narrow its unique indexes to one shard-key
 * value and spread nothing.
 */
export async function detectShardEngine(client: mongo.MongoClient, dbName: string): Promise<ShardEngine> {
  const hello = await client.db('admin').command({ hello: 1 });
  if (hello.msg !== 'isdbgrid') {
    throw new ShardRefusal('this database is not a sharded cluster (connect MONGO_URL to a mongos)');
  }
  const config = client.db('config');
  if ((await config.collection('shards').countDocuments({})) > 0) return 'mongodb';
  const probe = `shard_probe_${randomBytes(4).toString('hex')}`;
  const ns = `${dbName}.${probe}`;
  try {
    await client.db('admin').command({ shardCollection: ns, key: { _id: 'hashed' } });
    const shards = await config.collection('chunks').distinct('shard', { ns });
    if (shards.length < 2) {
      throw new ShardRefusal(
        `this engine keeps every chunk on one shard (${shards.join(', ') || 'none'}): a single node cannot shard`,
      );
    }
    return 'documentdb-distributed';
  } catch (error) {
    if (error instanceof ShardRefusal) throw error;
    throw new ShardRefusal(`this engine refuses shardCollection: ${(error as Error).message}`);
  } finally {
    await client
      .db(dbName)
      .dropCollection(probe)
      .catch(() => undefined);
  }
}
