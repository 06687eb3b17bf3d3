import type { IncomingMessage, ServerResponse } from 'http';
import { fhirJsonType, parseFhirVersion } from '@app/fhir';
import type { ClientConcurrency } from './client-concurrency';
import type { KnownCredentials } from './known-credentials';

/**
 * The first middleware of the app (docs/security.md "Tenant fairness"): a FHIR store request whose
 * credentials were verified recently (KnownCredentials) by a client that ClientConcurrency would
 * refuse now is answered 429 here, with the same OperationOutcome and Retry-After, before it is
 * logged, routed, its body parsed or its token verified again. A client hammering the server
 * while throttled so costs one map look-up per request; refusals answered here are not logged one
 * by one (a flood would otherwise be written to the log line by line). Everything else goes on.
 */
export function earlyRefusal(concurrency: ClientConcurrency, credentials: KnownCredentials) {
  return (req: IncomingMessage, res: ServerResponse, next: () => void): void => {
    // the store's base `/{v}/…`, where every route is admitted (the directory's are not)
    const version = parseFhirVersion((req.url ?? '/').split(/[/?]/)[1] ?? '');
    const clientId = version === undefined ? undefined : credentials.clientOf(req);
    const refusal = clientId === undefined ? undefined : concurrency.refusal(clientId);
    if (!refusal || version === undefined) return next();
    const body = JSON.stringify(refusal.outcome);
    res.writeHead(refusal.status, {
      ...refusal.headers,
      'Content-Type': `${fhirJsonType(version)}; charset=utf-8`,
      'Content-Length': Buffer.byteLength(body),
      'Cache-Control': 'no-store',
    });
    res.end(body);
  };
}
