import { INestApplicationContext } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { Logger } from 'nestjs-pino';
import { AppModule } from '../app.module';
import { parseSettings } from '../config/settings';
import { resolveDatabase } from '../database/embedded-database';

/**
 * Boots the Nest application context without the HTTP server, runs `fn`, and closes everything
 * (the embedded database included). Logs go to stderr so that stdout holds only results.
 */
export async function withAppContext<T>(fn: (app: INestApplicationContext) => Promise<T>): Promise<T> {
  // warnings only on stderr unless LOG_LEVEL asks for more
  const settings = parseSettings(process.env, { logLevel: 'warn' });
  const database = await resolveDatabase(settings.mongoUrl, settings.dataDir, settings.engine);
  let app: INestApplicationContext | undefined;
  try {
    app = await NestFactory.createApplicationContext(
      AppModule.register({ settings, database, logToStderr: true }),
      {
        // buffered, then replayed through pino on stderr: Nest's console logger prints warnings on
        // stdout, which would break the one-JSON-object output of commands like `client create`
        bufferLogs: true,
        abortOnError: false,
      },
    );
    app.useLogger(app.get(Logger));
    return await fn(app);
  } finally {
    if (app) await app.close();
    else await database.stop();
  }
}
