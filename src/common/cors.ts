import type { NextFunction, Request, Response } from 'express';
import { isFhirPath } from '../fhir-http/fhir-route-state';

/** Paths of the public discovery documents (SMART configuration, OIDC, JWKS, CapabilityStatement). */
function isDiscovery(path: string): boolean {
  return path.includes('/.well-known/') || /\/metadata\/?$/.test(path);
}

/** The token-endpoint family a browser app (a public SMART client) calls. */
const BROWSER_TOKEN_PATHS = new Set(['/oauth2/token', '/oauth2/introspect', '/oauth2/revoke']);

/**
 * CORS (SMART App Launch 2.2 §2.1 and §2.1.8: browser apps read discovery and call the token
 * endpoint and the FHIR API):
 * - discovery documents: any origin (public, no credentials);
 * - the FHIR routes and the token, introspection and revocation endpoints: the operator's
 *   FHIR_CORS_ORIGINS and the origins of the registered SMART apps' redirect URIs;
 * - everything else (user management, auth-code, the member pages): never.
 * `appOrigins` is cached by its owner (ClientsService).
 */
export function corsMiddleware(
  configured: readonly string[],
  appOrigins: () => Promise<ReadonlySet<string>>,
) {
  const operator = new Set(configured);
  const allow = (res: Response, origin: string, methods: string) => {
    res.setHeader('Access-Control-Allow-Origin', origin);
    res.setHeader('Vary', 'Origin');
    res.setHeader(
      'Access-Control-Allow-Headers',
      'Authorization, Content-Type, Accept, Prefer, If-Match, If-None-Exist',
    );
    res.setHeader('Access-Control-Allow-Methods', methods);
    res.setHeader('Access-Control-Expose-Headers', 'Location, ETag, Content-Location, X-Progress');
    res.setHeader('Access-Control-Max-Age', '600');
  };
  return (req: Request, res: Response, next: NextFunction): void => {
    const origin = req.headers.origin;
    if (!origin) return next();
    const path = req.path;
    const preflight = req.method === 'OPTIONS';
    if (isDiscovery(path) && (req.method === 'GET' || req.method === 'HEAD' || preflight)) {
      allow(res, '*', 'GET, HEAD');
      if (preflight) return void res.status(204).end();
      return next();
    }
    const fhir = isFhirPath(path);
    if (!fhir && !BROWSER_TOKEN_PATHS.has(path)) return next();
    const answer = (allowed: boolean) => {
      if (allowed) allow(res, origin, fhir ? 'GET, POST, PUT, PATCH, DELETE' : 'POST');
      if (allowed && preflight) return void res.status(204).end();
      next();
    };
    if (operator.has(origin) || operator.has('*')) return answer(true);
    appOrigins().then(
      (origins) => answer(origins.has(origin)),
      (error: unknown) => next(error),
    );
  };
}
