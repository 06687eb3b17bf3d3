import type { IncomingMessage, Server, ServerResponse } from 'http';
import type { Socket } from 'net';
import { HttpException } from '@nestjs/common';
import type { NextFunction, Request, Response } from 'express';
import { fhirJsonType, parseFhirVersion } from '@app/fhir';
import { isFhirPath } from '../fhir-http/fhir-route-state';

/** Routes whose answers carry a token, a code or a secret (docs/api.md §3, §4). */
const CREDENTIAL_ROUTE = /^\/(?:user-management\/|oauth2\/|auth\/realms\/)/i;
/** Bulk export manifests and status answers list signed file links (tokens in their URLs). */
const EXPORT_LINKS = /\/\$export(?:-status)?(?:\/|$)/i;

/**
 * Cache-Control for every answer (docs/security.md), set before the route runs so that errors get
 * it too (a route may set its own later): `no-store` (+ `Pragma: no-cache`, RFC 6749 §5.1) where
 * a token, code or secret can be in the answer; `private` on FHIR data, which is one user's.
 */
export function cacheControl(req: Request, res: Response, next: NextFunction): void {
  if (CREDENTIAL_ROUTE.test(req.path) || EXPORT_LINKS.test(req.path)) {
    res.setHeader('Cache-Control', 'no-store');
    res.setHeader('Pragma', 'no-cache');
  } else if (isFhirPath(req.path)) {
    res.setHeader('Cache-Control', 'private');
  }
  next();
}

function uriTooLong(length: number, max: number): string {
  return `the request URL is ${length} characters long; at most ${max} are accepted (send search parameters in a POST _search body)`;
}

/** 414 for a URL longer than MAX_URL_LENGTH that Node's header limit let through. */
export function urlLengthLimit(max: number) {
  return (req: Request, _res: Response, next: NextFunction): void => {
    const length = req.originalUrl.length;
    if (length <= max) return next();
    next(new HttpException({ error: 'uri_too_long', message: uriTooLong(length, max) }, 414));
  };
}

const answered = new WeakSet<Socket>();

/**
 * Answers requests Node's HTTP parser refuses before any route (its default would be a bare 431,
 * or a reset while the client is still sending): a request line longer than Node's header limit
 * → 414, other header overflows → 431, other parse errors → 400. The rest of what the client sends
 * is read and dropped, so that it receives the answer instead of a connection reset.
 */
export function answerParserErrors(server: Server, maxUrlLength: number): void {
  server.on('clientError', (err: Error & { code?: string; rawPacket?: Buffer }, socket: Socket) => {
    const inFlight = (socket as Socket & { _httpMessage?: { headersSent?: boolean } })._httpMessage;
    if (answered.has(socket) || !socket.writable || inFlight?.headersSent) {
      if (!answered.has(socket)) socket.destroy();
      return;
    }
    answered.add(socket);
    const head = err.rawPacket?.toString('latin1') ?? '';
    const lineEnd = head.indexOf('\r\n');
    const path = /^[A-Z]+ (\S+)/.exec(head)?.[1] ?? '';
    let status = 400;
    let reason = 'Bad Request';
    let message = 'the request could not be parsed as HTTP/1.1';
    if (err.code === 'HPE_HEADER_OVERFLOW') {
      const urlTooLong = lineEnd < 0 || lineEnd > maxUrlLength;
      [status, reason] = urlTooLong ? [414, 'URI Too Long'] : [431, 'Request Header Fields Too Large'];
      message = urlTooLong
        ? uriTooLong(lineEnd < 0 ? head.length : lineEnd, maxUrlLength)
        : 'the request headers are larger than the server accepts';
    } else if (err.code === 'ERR_HTTP_REQUEST_TIMEOUT') {
      [status, reason, message] = [408, 'Request Timeout', 'the request was not received in time'];
    }
    const fhirPath = path.split('?')[0];
    const fhir = isFhirPath(fhirPath);
    // each version's own media type (DSTU2: application/json+fhir, https://hl7.org/fhir/DSTU2/http.html#mime-type)
    const fhirType = fhirJsonType(parseFhirVersion(fhirPath.split('/')[1] ?? '') ?? 'r4');
    const body = fhir
      ? JSON.stringify({
          resourceType: 'OperationOutcome',
          issue: [{ severity: 'error', code: status === 400 ? 'invalid' : 'too-long', diagnostics: message }],
        })
      : JSON.stringify({ error: reason.toLowerCase().replace(/ /g, '_'), message });
    socket.on('error', () => undefined);
    socket.resume();
    socket.end(
      `HTTP/1.1 ${status} ${reason}\r\nContent-Type: ${fhir ? fhirType : 'application/json'}; charset=utf-8\r\n` +
        `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    );
    setTimeout(() => socket.destroy(), 5000).unref();
  });
}

type Middleware = (req: IncomingMessage, res: ServerResponse, next: (error?: unknown) => void) => void;

/** Header names and values, set as they are on an answer. */
export type HeaderBlock = ReadonlyArray<readonly [string, string]>;

/**
 * The headers a middleware sets on every answer, found by running it once against a recording
 * response. Only for a middleware whose headers depend on nothing of the request or the response
 * (helmet's, with its fixed directives): it must finish synchronously and set only headers. Setting
 * the recorded block is a loop of `setHeader`; helmet itself builds its Content-Security-Policy text
 * again on every request.
 */
export function recordedHeaders(middleware: Middleware): HeaderBlock {
  const headers = new Map<string, [string, string]>();
  const recorder = {
    setHeader(name: string, value: unknown) {
      headers.set(name.toLowerCase(), [name, String(value)]);
      return recorder;
    },
    removeHeader(name: string) {
      headers.delete(name.toLowerCase());
    },
    getHeader(name: string) {
      return headers.get(name.toLowerCase())?.[1];
    },
  };
  let finished = false;
  const request = { method: 'GET', url: '/', headers: {} } as IncomingMessage;
  middleware(request, recorder as unknown as ServerResponse, (error) => {
    if (error) throw error instanceof Error ? error : new Error(String(error));
    finished = true;
  });
  if (!finished) throw new Error('a recorded middleware must finish synchronously');
  return [...headers.values()];
}

/** Sets a recorded header block on every answer: `blockOf` picks the block by request. */
export function headerBlocks(blockOf: (req: Request) => HeaderBlock) {
  return (req: Request, res: Response, next: NextFunction): void => {
    for (const [name, value] of blockOf(req)) res.setHeader(name, value);
    next();
  };
}

/**
 * A request with a body (RFC 9110 §6.4.1: it says Transfer-Encoding or Content-Length), as
 * body-parser's `type-is.hasBody` decides it: every body parser and body check skips the others.
 */
function hasBody(req: IncomingMessage): boolean {
  return req.headers['transfer-encoding'] !== undefined || !isNaN(Number(req.headers['content-length']));
}

type Step<Req, Res> = (req: Req, res: Res, next: (error?: unknown) => void) => unknown;

/**
 * Middleware run in order as ONE Express layer, each ending as it would in a layer of its own: an
 * error (passed to `next`, thrown, or a rejected promise, as Express 5 takes it) ends the steps and
 * goes on to Express's error handling, the last step's `next()` to the app's next layer. Express's
 * router walks every layer with a match, a params object and a closure of its own per request;
 * the app's fixed middleware in one layer spares a request all but one of those walks.
 */
export function inOneLayer<Req extends IncomingMessage, Res extends ServerResponse>(
  steps: ReadonlyArray<Step<Req, Res>>,
) {
  return (req: Req, res: Res, next: (error?: unknown) => void): void => {
    let at = 0;
    const step = (error?: unknown): void => {
      if (error !== undefined && error !== null) return next(error);
      const handler = steps[at++];
      if (handler === undefined) return next();
      let returned: unknown;
      try {
        returned = handler(req, res, step);
      } catch (thrown) {
        return next(thrown);
      }
      if (returned instanceof Promise) {
        returned.then(undefined, (rejected: unknown) => next(rejected ?? new Error('Rejected promise')));
      }
    };
    step();
  };
}

/**
 * The body stack (parsers, then the checks of what they parsed) as one middleware run only for a
 * request that has a body, in order, an error ending it as Express would: a GET passes it in one
 * step instead of one per parser and check, each of which would find nothing to do.
 */
export function forRequestBodies<Req extends IncomingMessage, Res extends ServerResponse>(
  handlers: ReadonlyArray<Step<Req, Res>>,
) {
  const steps = inOneLayer(handlers);
  return (req: Req, res: Res, next: (error?: unknown) => void): void => {
    if (!hasBody(req)) return next();
    steps(req, res, next);
  };
}
