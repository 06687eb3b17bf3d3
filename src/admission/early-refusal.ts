import type { IncomingMessage, Server, ServerResponse } from 'http';
import proxyaddr from 'proxy-addr';
import { fhirJsonType, OperationOutcomeError, parseFhirVersion } from '@app/fhir';
import { presentedCredentials } from '../modules/auth/clients/client-credentials';
import { credentialsRequired } from '../tenancy/tenant-resolver';
import type { ClientConcurrency } from './client-concurrency';
import type { KnownCredentials } from './known-credentials';

/** A 429 the failure throttle answers: its message and its Retry-After. */
interface ThrottleRefusal {
  message: string;
  headers: Record<string, string>;
}

/** What the failure throttle already knows, from memory, about a source. */
export interface KnownSourceRefusals {
  /** The refusal these client credentials from this address get now, if any. */
  knownRefusal(clientId: string, secret: string, address: string): ThrottleRefusal | undefined;
  /** The refusal the address was last given in the current window (a counter of it spent), if any. */
  refusedLately(address: string): ThrottleRefusal | undefined;
}

type Next = (error?: unknown) => void;
type Handler = (req: IncomingMessage, res: ServerResponse, next: Next) => void;

export interface EarlyRefusalParts {
  concurrency: ClientConcurrency;
  credentials: KnownCredentials;
  sources: KnownSourceRefusals;
  /** The source address as Express's `req.ip` gives it (TRUST_PROXY applies). */
  sourceAddress: (req: IncomingMessage) => string;
  /** The app's own form-body parser (the same options as the one Express runs). */
  formBody: Handler;
}

/** The FHIR routes of the store's base that anyone may read (CapabilityStatement, SMART configuration). */
const PUBLIC_FHIR_PATH = /^\/[^/?]+\/(?:metadata|\.well-known\/)/;

/** The token endpoints, where client credentials may come as HTTP Basic or in the form body. */
const TOKEN_PATH = /^\/(?:oauth2\/token|auth\/realms\/[^/?]+\/protocol\/openid-connect\/token)\/?(?:\?|$)/;

/**
 * Runs ahead of Express (docs/security.md "Refusals cost almost nothing"): a request whose caller
 * this process would refuse now is answered 429 here, with the same answer and Retry-After as the
 * full path gives, before Express parses its query, it is logged, routed, its body parsed or its
 * credentials verified again:
 * - on the FHIR store's base `/{v}/…`, credentials verified recently (KnownCredentials) of a
 *   caller (client, or user within it) that ClientConcurrency would refuse now;
 * - client credentials in headers (the FHIR client headers, HTTP Basic at a token endpoint) from a
 *   source the failure throttle has counted out (and not a secret it verified as right lately);
 * - on the FHIR store's base, a request with a body and no credentials at all (no Authorization,
 *   no client_id/client_secret headers) gets the 401 the route would give, its body not parsed:
 *   nobody could be charged for parsing it (the credentials of a FHIR route are never in its body);
 * - at a token endpoint, from an address the throttle refused in this window, the form body is read
 *   here (the app's own parser: small, and Express then finds it read) and its `client_id` +
 *   `client_secret` meet the same rule; a body that cannot be read is refused as well.
 * A flood of them costs a map look-up and a digest per request; they are not logged one by one (a
 * flood would otherwise be written to the log line by line). Everything else goes on.
 */
export function earlyRefusal(parts: EarlyRefusalParts): Handler {
  const { concurrency, credentials, sources, sourceAddress, formBody } = parts;
  return (req, res, next) => {
    const url = req.url ?? '/';
    const version = parseFhirVersion(url.split(/[/?]/)[1] ?? '');
    if (version !== undefined) {
      const caller = credentials.callerOf(req);
      const refusal = caller
        ? concurrency.refusal(caller.clientId, caller.user)
        : (anonymousBody(req, url) ?? sourceRefusal(req, sources, sourceAddress));
      if (!refusal) return next();
      // as the exception filter answers a 401 or 429 on a FHIR route
      const error =
        refusal instanceof OperationOutcomeError
          ? refusal
          : new OperationOutcomeError('throttled', refusal.message, { status: 429 });
      const reply = () =>
        answer(
          res,
          error.status,
          refusal.headers ?? {},
          JSON.stringify(error.outcome),
          fhirJsonType(version),
        );
      return withLargeBody(req) ? answerLater(res, reply) : reply();
    }
    if (req.method !== 'POST' || !TOKEN_PATH.test(url)) return next();
    const address = sourceAddress(req);
    const presented = presentedCredentials(req);
    if (presented) {
      const refusal = sources.knownRefusal(presented.clientId, presented.secret, address);
      return refusal ? refuseToken(res, refusal) : next();
    }
    const lately = sources.refusedLately(address);
    if (!lately) return next();
    formBody(req, res, (error) => {
      if (error) return refuseToken(res, lately);
      const inBody = presentedCredentials(req);
      const refusal = inBody && sources.knownRefusal(inBody.clientId, inBody.secret, address);
      return refusal ? refuseToken(res, refusal) : next();
    });
  };
}

/** The 401 of a FHIR request that carries a body but no credentials at all, unless its route is public. */
function anonymousBody(req: IncomingMessage, url: string): OperationOutcomeError | undefined {
  const { headers } = req;
  const body = headers['transfer-encoding'] !== undefined || Number(headers['content-length'] ?? 0) > 0;
  if (!body || PUBLIC_FHIR_PATH.test(url)) return undefined;
  if (headers.authorization !== undefined || headers['client_id'] !== undefined) return undefined;
  if (headers['client_secret'] !== undefined) return undefined;
  return credentialsRequired(/[?&]access_token(?:[=&]|$)/.test(url));
}

/** A refused request declaring a body larger than this (or chunked) is answered after REFUSED_UPLOAD_WAIT_MS. */
const LARGE_BODY_BYTES = 64 * 1024;
const REFUSED_UPLOAD_WAIT_MS = 1_000;

function withLargeBody(req: IncomingMessage): boolean {
  return (
    req.headers['transfer-encoding'] !== undefined ||
    Number(req.headers['content-length'] ?? 0) > LARGE_BODY_BYTES
  );
}

/**
 * A refused upload is answered a second later, its body left unread meanwhile (Node stops reading
 * a connection whose request is not consumed). Answered at once, a caller that ignores Retry-After
 * sends its next 1 MB body right away, and Node reads every one of them off the connection: 32
 * connections of refused narratives cost the server more (~2 ms each, hundreds a second) than the
 * narratives it refused. A caller that waits as told never meets this wait.
 */
function answerLater(res: ServerResponse, reply: () => void): void {
  const timer = setTimeout(() => {
    if (!res.destroyed) reply();
  }, REFUSED_UPLOAD_WAIT_MS);
  res.once('close', () => clearTimeout(timer));
}

/**
 * Puts `early` in front of the server's request listeners (the Express app): a request it answers
 * never reaches Express, so none of Express's own start of a request (query parser, request and
 * response set-up) nor any middleware runs for it.
 */
export function refuseAheadOf(server: Server, early: Handler): void {
  const listeners = server.listeners('request') as Array<(req: IncomingMessage, res: ServerResponse) => void>;
  server.removeAllListeners('request');
  server.on('request', (req: IncomingMessage, res: ServerResponse) =>
    early(req, res, () => {
      for (const listener of listeners) listener.call(server, req, res);
    }),
  );
}

/**
 * The source address exactly as Express's `req.ip` computes it: proxy-addr with the app's compiled
 * `trust proxy` setting (TRUST_PROXY), read at each request as Express reads it.
 */
export function expressSourceAddress(app: { get(setting: string): unknown }) {
  return (req: IncomingMessage): string =>
    proxyaddr(req, app.get('trust proxy fn') as (address: string, hop: number) => boolean);
}

/** The failure throttle's refusal of the client credentials the request carries in its headers. */
function sourceRefusal(
  req: IncomingMessage,
  sources: KnownSourceRefusals,
  sourceAddress: (req: IncomingMessage) => string,
) {
  const presented = presentedCredentials(req);
  return presented && sources.knownRefusal(presented.clientId, presented.secret, sourceAddress(req));
}

/** As the token endpoints answer a 429 (`{ error, message }`, never cached). */
function refuseToken(res: ServerResponse, refusal: ThrottleRefusal): void {
  const body = JSON.stringify({ error: 'too_many_requests', message: refusal.message });
  answer(res, 429, { ...refusal.headers, Pragma: 'no-cache' }, body, 'application/json');
}

function answer(
  res: ServerResponse,
  status: number,
  headers: Record<string, string>,
  body: string,
  type: string,
): void {
  res.writeHead(status, {
    ...headers,
    'Content-Type': `${type}; charset=utf-8`,
    'Content-Length': Buffer.byteLength(body),
    'Cache-Control': 'no-store',
  });
  res.end(body);
}
