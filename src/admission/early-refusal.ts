import type { IncomingMessage, ServerResponse } from 'http';
import { fhirJsonType, OperationOutcomeError, parseFhirVersion } from '@app/fhir';
import type { ClientConcurrency } from './client-concurrency';
import type { KnownCredentials } from './known-credentials';

/** A refusal the failure throttle already knows it would answer for these client credentials. */
export interface KnownSourceRefusals {
  knownRefusal(
    clientId: string,
    secret: string,
    address: string,
  ): { message: string; headers: Record<string, string> } | undefined;
}

/** The token endpoints, where client credentials may come as HTTP Basic. */
const TOKEN_PATH = /^\/(?:oauth2\/token|auth\/realms\/[^/?]+\/protocol\/openid-connect\/token)\/?(?:\?|$)/;

/**
 * The first middleware of the app (docs/security.md "Refusals cost almost nothing"): a request
 * whose caller this process would refuse now is answered 429 here, with the same answer and
 * Retry-After as the full path gives, before it is logged, routed, its body parsed or its
 * credentials verified again:
 * - on the FHIR store's base `/{v}/…`, credentials verified recently (KnownCredentials) of a
 *   caller (client, or user within it) that ClientConcurrency would refuse now;
 * - client credentials in headers (the FHIR client headers, HTTP Basic at a token endpoint) from a
 *   source the failure throttle has counted out (and not a secret it verified as right lately).
 * A flood of them costs a map look-up and a digest per request; they are not logged one by one (a
 * flood would otherwise be written to the log line by line). Everything else goes on.
 */
export function earlyRefusal(
  concurrency: ClientConcurrency,
  credentials: KnownCredentials,
  sources: KnownSourceRefusals,
) {
  return (req: IncomingMessage, res: ServerResponse, next: () => void): void => {
    const url = req.url ?? '/';
    const version = parseFhirVersion(url.split(/[/?]/)[1] ?? '');
    if (version !== undefined) {
      const caller = credentials.callerOf(req);
      const refusal = caller
        ? concurrency.refusal(caller.clientId, caller.user)
        : sourceRefusal(req, sources);
      if (!refusal) return next();
      // as the exception filter answers a 429 on a FHIR route
      const outcome =
        refusal instanceof OperationOutcomeError
          ? refusal.outcome
          : new OperationOutcomeError('throttled', refusal.message, { status: 429 }).outcome;
      return answer(res, 429, refusal.headers ?? {}, JSON.stringify(outcome), fhirJsonType(version));
    }
    if (req.method === 'POST' && TOKEN_PATH.test(url)) {
      const refusal = sourceRefusal(req, sources);
      if (!refusal) return next();
      const body = JSON.stringify({ error: 'too_many_requests', message: refusal.message });
      return answer(res, 429, { ...refusal.headers, Pragma: 'no-cache' }, body, 'application/json');
    }
    next();
  };
}

/** The failure throttle's refusal of the client credentials the request carries in its headers. */
function sourceRefusal(req: IncomingMessage, sources: KnownSourceRefusals) {
  const presented = headerCredentials(req);
  if (!presented) return undefined;
  // Express's req.ip (TRUST_PROXY applies), as the failure throttle counts it
  const address = (req as { ip?: string }).ip ?? req.socket.remoteAddress ?? 'unknown';
  return sources.knownRefusal(presented.clientId, presented.secret, address);
}

function headerCredentials(req: IncomingMessage): { clientId: string; secret: string } | undefined {
  const { authorization } = req.headers;
  if (typeof authorization === 'string') {
    if (!/^basic /i.test(authorization)) return undefined;
    const decoded = Buffer.from(authorization.slice(6).trim(), 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    if (colon <= 0) return undefined;
    try {
      const clientId = decodeURIComponent(decoded.slice(0, colon).replace(/\+/g, ' '));
      const secret = decodeURIComponent(decoded.slice(colon + 1).replace(/\+/g, ' '));
      return clientId && secret ? { clientId, secret } : undefined;
    } catch {
      return undefined;
    }
  }
  const clientId = req.headers.client_id;
  const secret = req.headers.client_secret;
  return typeof clientId === 'string' && clientId && typeof secret === 'string' && secret
    ? { clientId, secret }
    : undefined;
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
