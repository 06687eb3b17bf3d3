import { randomUUID } from 'crypto';
import { DynamicModule, Module, RequestMethod } from '@nestjs/common';
import { LoggerModule } from 'nestjs-pino';
import pino from 'pino';
import type { IncomingMessage, ServerResponse } from 'http';
import { Settings } from '../config/settings';

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/** Honour a sane incoming x-request-id; otherwise make one. It is echoed in the response. */
export function requestId(req: IncomingMessage, res: ServerResponse): string {
  const assigned = res.getHeader('x-request-id');
  if (typeof assigned === 'string') return assigned;
  const incoming = req.headers['x-request-id'];
  const id = typeof incoming === 'string' && REQUEST_ID.test(incoming) ? incoming : randomUUID();
  res.setHeader('x-request-id', id);
  return id;
}

/**
 * Express middleware giving every request its id, logged or not (the request logger below reads
 * the same id, so a log line and the response header always agree).
 */
export function requestIdMiddleware(req: IncomingMessage, res: ServerResponse, next: () => void): void {
  requestId(req, res);
  next();
}

/** Path segments that are credentials: the signed token of a bulk export file link. */
const SECRET_SEGMENTS: ReadonlyArray<[RegExp, string]> = [
  [/(\$export\/[^/]+\/)[^/]+(\.ndjson)$/i, '$1[redacted]$2'],
];

/**
 * Only the path, with credentials in it redacted: query strings may carry user data or secrets
 * (`/connect/system/clinical?client_secret=`), and no header or body is ever logged.
 */
export function loggablePath(url: string | undefined): string {
  let path = (url ?? '').split('?')[0];
  for (const [pattern, replacement] of SECRET_SEGMENTS) path = path.replace(pattern, replacement);
  return path;
}

/** JSON logs (pino) with a request id per request, and no secrets, tokens or bodies. */
@Module({})
export class LoggingModule {
  static register(settings: Settings, opts: { stderr?: boolean } = {}): DynamicModule {
    return {
      module: LoggingModule,
      imports: [
        LoggerModule.forRoot({
          // At level silent no request line can be written: skip pino-http's per-request child
          // logger and the request-scoped store (≈5% of a point read's CPU, measured) entirely.
          ...(settings.logLevel === 'silent'
            ? { exclude: [{ path: '{*all}', method: RequestMethod.ALL }] }
            : {}),
          pinoHttp: {
            level: settings.logLevel,
            // the CLI prints its results on stdout, so its logs go to stderr
            ...(opts.stderr ? { stream: pino.destination(2) } : {}),
            genReqId: requestId,
            quietReqLogger: true,
            serializers: {
              req: (req: { id: string; method: string; url: string }) => ({
                id: req.id,
                method: req.method,
                path: loggablePath(req.url),
              }),
              res: (res: { statusCode: number }) => ({ statusCode: res.statusCode }),
            },
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
            customLogLevel: (_req, res, err) =>
              err || res.statusCode >= 500 ? 'error' : res.statusCode >= 400 ? 'info' : 'info',
          },
        }),
      ],
    };
  }
}
