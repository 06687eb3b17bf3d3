import { randomBytes } from 'crypto';
import { INestApplication } from '@nestjs/common';
import { getConnectionToken } from '@nestjs/mongoose';
import { mongo, type Connection } from 'mongoose';
import { parseSettings, Settings } from '../../src/config/settings';
import { createApp } from '../../src/create-app';
import type { ShardEngine } from '../../src/storage/shard-engine';
import { shardCollections } from '../../src/storage/shard-keys';

export interface TestApp {
  app: INestApplication;
  /** The Node HTTP server, for supertest. */
  server: any;
  settings: Settings;
  dbName: string;
  connection: Connection;
  close(): Promise<void>;
}

/**
 * The real application on the real test database (started once by test/global-setup.ts), with a
 * database of its own that is dropped on close. `env` overrides settings (e.g. short TTLs).
 * `attachTo`: another app's database instead (a restart with other settings); left to that app to drop.
 */
export async function createTestApp(
  env: Record<string, string> = {},
  options: { attachTo?: string } = {},
): Promise<TestApp> {
  const uri = process.env.TEST_MONGO_URL;
  if (!uri) throw new Error('TEST_MONGO_URL is not set: run the e2e tests through jest (global setup)');
  const settings = parseSettings({ LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent', ...env });
  const dbName = options.attachTo ?? `t_${randomBytes(6).toString('hex')}`;
  if (options.attachTo === undefined) await shardForTest(uri, dbName);
  const app = await createApp(settings, { uri, engine: 'external', stop: async () => undefined }, dbName);
  await app.init();
  const connection = app.get<Connection>(getConnectionToken());
  return {
    app,
    server: app.getHttpServer(),
    settings,
    dbName,
    connection,
    close: async () => {
      if (options.attachTo === undefined) await connection.dropDatabase().catch(() => undefined);
      await app.close();
    },
  };
}

/**
 * On the sharded test run (test/sharded/global-setup.ts sets TEST_SHARD_ENGINE) each test file's
 * database gets its collections sharded before the app starts, as `store shard` does in production,
 * so the app creates its indexes on sharded collections.
 */
async function shardForTest(uri: string, dbName: string): Promise<void> {
  const engine = process.env.TEST_SHARD_ENGINE as ShardEngine | undefined;
  if (!engine) return;
  const client = await mongo.MongoClient.connect(uri);
  try {
    await shardCollections(client, dbName, engine);
  } finally {
    await client.close();
  }
}
