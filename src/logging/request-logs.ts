import { randomUUID } from 'crypto';
import type { IncomingMessage, ServerResponse } from 'http';
import { storage, type Store } from 'nestjs-pino/storage';
import type { Logger } from 'pino';

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

/**
 * The request's logger for what the app logs while serving it (nestjs-pino's PinoLogger reads it
 * from its store): the root logger with the request's id, made only if something logs.
 */
function requestStore(root: Logger, id: string): Store {
  let child: Logger | undefined;
  return {
    get logger() {
      return (child ??= root.child({ reqId: id }));
    },
    responseLogger: undefined,
  };
}

/** The middleware `requestLogs` makes. */
export type RequestLogs = (req: IncomingMessage, res: ServerResponse, next: () => void) => void;

/**
 * Every request gets its id (`x-request-id`, echoed), logged or not. With `root` (a level that
 * logs requests), one line per request once it is answered or its connection closes, with the
 * fields pino-http wrote: `reqId`, `req` {id, method, path}, `res` {statusCode}, `responseTime`
 * (ms), 'request completed' at info, or 'request errored' at error with `err` for a 5xx (the
 * exception filter leaves the error behind it on `res.err`) or a response stream error. Written
 * by hand in one finish hook: pino-http made two child loggers per request and ran the standard
 * serializers (copying every request and response header) before ours. What the app logs while
 * serving the request carries its `reqId`.
 */
export function requestLogs(
  root: Logger | undefined,
  // The 'request completed' line holds only the fields above (the path already without its query
  // and credentials), none a redaction path can name: written without the root's redaction walk,
  // which was most of the line's cost (its wildcard paths visit every field). 'request errored'
  // carries an error, which can hold anything: through the root, redacted.
  completed: Logger | undefined = root?.child({}, { redact: [] }),
): RequestLogs {
  return (req: IncomingMessage, res: ServerResponse, next: () => void): void => {
    const id = requestId(req, res);
    if (root === undefined) return next();
    const started = Date.now();
    const path = loggablePath((req as { originalUrl?: string }).originalUrl ?? req.url);
    const method = req.method;
    const done = (streamError?: Error) => {
      res.off('close', done);
      res.off('finish', done);
      res.off('error', done);
      const { statusCode } = res;
      const responseTime = Date.now() - started;
      const answered = { reqId: id, req: { id, method, path }, res: { statusCode } };
      const failed = (res as { err?: unknown }).err;
      // The fields in pino-http's order (`err` before `responseTime`): log readers match on it.
      if (streamError || failed || statusCode >= 500) {
        const err = streamError ?? failed ?? new Error(`failed with status code ${statusCode}`);
        root.error({ ...answered, err, responseTime }, 'request errored');
      } else {
        completed!.info({ ...answered, responseTime }, 'request completed');
      }
    };
    res.on('close', done);
    res.on('finish', done);
    res.on('error', done);
    storage.run(requestStore(root, id), next);
  };
}
