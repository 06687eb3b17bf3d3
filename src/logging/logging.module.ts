import { DynamicModule, Module } from '@nestjs/common';
import { LoggerModule } from 'nestjs-pino';
import pino from 'pino';
import { Settings } from '../config/settings';
import { requestLogs } from './request-logs';

/**
 * The stdout of the 'request completed' lines: written in blocks of up to 4 KB, at most 100 ms
 * late, and flushed when the process exits (pino flushes its destination on `exit`), instead of one
 * write per line. Each write of pino's default destination goes through libuv's thread pool and
 * wakes the event loop again (a context switch or two per line), and at LOG_LEVEL=info every
 * request writes a line: a line spaced like a request's cost ≈ 40 µs of CPU that way, ≈ 15 µs
 * buffered. Every other line (start-up, the engine, warnings, errors) is rare and goes out at once
 * through the root's own destination, so an operator (or a test) reading the log sees it when it
 * happens; only the order between a request line and another line may differ by those 100 ms.
 */
export function bufferedLogDestination(fd = 1): ReturnType<typeof pino.destination> {
  return pino.destination({ dest: fd, minLength: 4096, periodicFlush: 100 });
}

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
    const requestLines = opts.stderr
      ? undefined
      : pino({ level: settings.logLevel }, bufferedLogDestination());
    return {
      module: LoggingModule,
      imports: [LoggerModule.forRoot({ pinoHttp: { logger: root }, useExisting: true, forRoutes: [] })],
      providers: [
        // at level silent no request line can be written: no hook, no per-request store at all
        {
          provide: REQUEST_LOGS,
          useValue: requestLogs(settings.logLevel === 'silent' ? undefined : root, requestLines),
        },
      ],
      exports: [REQUEST_LOGS],
    };
  }
}
