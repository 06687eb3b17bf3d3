import { mongo } from 'mongoose';
import { parseSettings } from '../../config/settings';
import { resolveDatabase } from '../../database/embedded-database';
import { detectShardEngine, ShardRefusal } from '../../storage/shard-engine';
import { backfillResourceIds } from '../../storage/resource-ids.repository';
import { shardCollections } from '../../storage/shard-keys';

/**
 * `store shard` (docs/scaling.md): shards the store's collections of the configured database on
 * their keys. Prints one JSON report on stdout; a refusal (an engine that cannot shard, a collection
 * sharded on another key) is one line on stderr and exit code 1, with nothing changed.
 */
export async function storeShard(): Promise<void> {
  const settings = parseSettings(process.env);
  const database = await resolveDatabase(settings.mongoUrl, settings.dataDir, settings.engine);
  const client = new mongo.MongoClient(database.uri);
  try {
    await client.connect();
    const engine = await detectShardEngine(client, settings.mongoDb);
    let claimsAdded = 0;
    // Claims first: once the resources are spread by user, only a claim keeps an id to one user.
    const collections = await shardCollections(client, settings.mongoDb, engine, async () => {
      claimsAdded = await backfillResourceIds(client.db(settings.mongoDb), (seen) =>
        process.stderr.write(`store shard: id claims checked for ${seen} resources\n`),
      );
    });
    process.stdout.write(
      `${JSON.stringify({ database: settings.mongoDb, engine, claimsAdded, collections })}\n`,
    );
  } catch (error) {
    if (!(error instanceof ShardRefusal)) throw error;
    process.stderr.write(`store shard: refused: ${error.message}\n`);
    process.exitCode = 1;
  } finally {
    await client.close();
    await database.stop();
  }
}
