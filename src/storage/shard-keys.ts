import type { mongo } from 'mongoose';
import { CONDITIONAL_KEYS_COLLECTION } from './conditional-keys.repository';
import { HISTORY_COLLECTION, RESOURCES_COLLECTION } from './documents';
import { RESOURCE_IDS_COLLECTION } from './resource-ids.repository';
import { ShardRefusal, type ShardEngine } from './shard-engine';

/**
 * Which collections are sharded and on which key (docs/scaling.md has the reasons). The resource
 * and history collections go by owner (client, user): every query of a user-scoped credential
 * fixes both, so it is routed to one shard. The claim collections go by `_id`: each operation on
 * them names one `_id` (which holds the client and, for condition keys, the user), and only a
 * shard key that is the `_id` itself makes `_id` unique across shards.
 * Small collections (clients, users, tokens, codes, jti, export jobs, directory) stay unsharded.
 */
export type ShardKey = Readonly<Record<string, 1 | 'hashed'>>;

interface ShardedCollection {
  name: string;
  /** MongoDB: ranged on the client first, so zones can pin a client's documents to chosen shards. */
  mongodb: ShardKey;
  /** DocumentDB distributed (Citus) takes hashed keys only. */
  hashedOnly: ShardKey;
}

const BY_OWNER = { mongodb: { c: 1, u: 'hashed' }, hashedOnly: { c: 'hashed', u: 'hashed' } } as const;
const BY_ID = { mongodb: { _id: 'hashed' }, hashedOnly: { _id: 'hashed' } } as const;

export const SHARDED_COLLECTIONS: readonly ShardedCollection[] = [
  { name: RESOURCES_COLLECTION, ...BY_OWNER },
  { name: HISTORY_COLLECTION, ...BY_OWNER },
  { name: RESOURCE_IDS_COLLECTION, ...BY_ID },
  { name: CONDITIONAL_KEYS_COLLECTION, ...BY_ID },
];

export function shardKeyOf(collection: ShardedCollection, engine: ShardEngine): ShardKey {
  return engine === 'mongodb' ? collection.mongodb : collection.hashedOnly;
}

export interface ShardOutcome {
  collection: string;
  key: ShardKey;
  state: 'sharded' | 'already sharded';
}

const sameKey = (a: object, b: object) => JSON.stringify(a) === JSON.stringify(b);

/**
 * Shards the store's collections of database `dbName` on their keys (creating an empty collection
 * when absent). Idempotent: a collection sharded on its key already is left alone; one sharded on
 * another key is a refusal (resharding is the operator's decision: docs/scaling.md).
 */
export async function shardCollections(
  client: mongo.MongoClient,
  dbName: string,
  engine: ShardEngine,
  /** Runs after the checks, before the first change of a shard key (the id-claim backfill). */
  prepare: () => Promise<void> = async () => undefined,
): Promise<ShardOutcome[]> {
  const admin = client.db('admin');
  const current = client.db('config').collection<{ _id: string; key: ShardKey }>('collections');
  const targets = SHARDED_COLLECTIONS.map((c) => ({ name: c.name, key: shardKeyOf(c, engine) }));
  // Every refusal before any change: nothing is half done.
  const existing = new Map<string, ShardKey>();
  for (const { name, key } of targets) {
    const found = await current.findOne({ _id: `${dbName}.${name}` });
    if (!found?.key) continue;
    if (!sameKey(found.key, key)) {
      throw new ShardRefusal(
        `${dbName}.${name} is sharded on ${JSON.stringify(found.key)}, not ${JSON.stringify(key)}: reshard it first (docs/scaling.md)`,
      );
    }
    existing.set(name, found.key);
  }
  await prepare();
  if (engine === 'mongodb') await admin.command({ enableSharding: dbName });
  const outcomes: ShardOutcome[] = [];
  for (const { name, key } of targets) {
    if (existing.has(name)) {
      outcomes.push({ collection: name, key, state: 'already sharded' });
      continue;
    }
    // MongoDB needs an index that starts with the key on a non-empty collection.
    if (engine === 'mongodb') await client.db(dbName).collection(name).createIndex(key);
    await admin.command({ shardCollection: `${dbName}.${name}`, key });
    outcomes.push({ collection: name, key, state: 'sharded' });
  }
  return outcomes;
}
