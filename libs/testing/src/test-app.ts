import { randomBytes } from 'crypto';
import { INestApplication } from '@nestjs/common';
import { getConnectionToken } from '@nestjs/mongoose';
import type { Connection } from 'mongoose';
import { parseSettings, Settings } from '../../../src/config/settings';
import { createApp } from '../../../src/create-app';

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
