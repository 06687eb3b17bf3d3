import { DynamicModule, Module } from '@nestjs/common';
import { LoggerModule } from 'nestjs-pino';
import pino from 'pino';
import { Settings } from '../config/settings';
import { requestLogs } from './request-logs';

/** The request middleware of the app (request id, and a line per request when the level logs them). */
export const REQUEST_LOGS = Symbol('RequestLogs');

/**
 * JSON logs (pino) with a request id per request, and no secrets, tokens or bodies. nestjs-pino
 * serves the app's Logger (PinoLogger) from the one root logger made here; its pino-http
 * middleware is not used: `requestLogs` (request-logs.ts, run by configure-app ahead of routing)
 * gives each request its id and writes its line.
 */
@Module({})
export class LoggingModule {
  static register(settings: Settings, opts: { stderr?: boolean } = {}): DynamicModule {
    const options: pino.LoggerOptions = {
      level: settings.logLevel,
      // belt and braces: even if something logs a header object, these never reach a line
      redact: {
        paths: [
          'req.headers.authorization',
          'req.headers.client_secret',
          'req.headers["client-secret"]',
          'req.headers.cookie',
          '*.client_secret',
          '*.access_token',
          '*.refresh_token',
          '*.id_token',
          '*.code',
          '*.password',
        ],
        censor: '[redacted]',
      },
    };
    // the CLI prints its results on stdout, so its logs go to stderr
    const root = opts.stderr ? pino(options, pino.destination(2)) : pino(options);
    return {
      module: LoggingModule,
      imports: [LoggerModule.forRoot({ pinoHttp: { logger: root }, useExisting: true, forRoutes: [] })],
      providers: [
        // at level silent no request line can be written: no hook, no per-request store at all
        {
          provide: REQUEST_LOGS,
          useValue: requestLogs(settings.logLevel === 'silent' ? undefined : root),
        },
      ],
      exports: [REQUEST_LOGS],
    };
  }
}
