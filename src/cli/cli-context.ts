import { INestApplicationContext } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { AppModule } from '../app.module';
import { parseSettings } from '../config/settings';
import { resolveDatabase } from '../database/embedded-database';

/**
 * Boots the Nest application context without the HTTP server, runs `fn`, and closes everything
 * (the embedded database included). Logs go to stderr so that stdout holds only results.
 */
export async function withAppContext<T>(fn: (app: INestApplicationContext) => Promise<T>): Promise<T> {
  const base = parseSettings(process.env);
  const settings = { ...base, logLevel: process.env.LOG_LEVEL ? base.logLevel : ('warn' as const) };
  const database = await resolveDatabase(settings.mongoUrl, settings.dataDir);
  let app: INestApplicationContext | undefined;
  try {
    app = await NestFactory.createApplicationContext(
      AppModule.register({ settings, database, logToStderr: true }),
      {
        logger: ['error', 'warn'],
        abortOnError: false,
      },
    );
    return await fn(app);
  } finally {
    if (app) await app.close();
    else await database.stop();
  }
}
