import { createParamDecorator, ExecutionContext } from '@nestjs/common';
import type { IncomingMessage } from 'http';
import type { Request } from 'express';
import { sourceAddress } from '../../../common/source-address';

/** Client credentials as presented, before authentication; `basic` tells which scheme carried them. */
export interface PresentedClientCredentials {
  clientId: string;
  secret: string;
  basic: boolean;
  /** The source address of the request (Express `req.ip`, so TRUST_PROXY applies): failures are counted per client and address. */
  address: string;
}

function str(v: unknown): string | undefined {
  return typeof v === 'string' && v.length > 0 ? v : undefined;
}

/**
 * Reads client credentials from, in order: HTTP Basic (RFC 6749 §2.3.1, form-urlencoded parts),
 * the body (`client_id` + `client_secret`, or `secret` as the spec's reference table names it),
 * then the `client_id` / `client_secret` headers (docs/api.md §3, PUT). Never from the query string.
 */
export function presentedClientCredentials(req: Request): PresentedClientCredentials | null {
  const found = presentedCredentials(req);
  return found ? { ...found, address: sourceAddress(req) } : null;
}

/**
 * The credentials of `presentedClientCredentials` without the address: also read ahead of Express
 * (admission's early refusal), where the body is there only once read.
 */
export function presentedCredentials(
  req: Pick<IncomingMessage, 'headers'> & { body?: unknown },
): Omit<PresentedClientCredentials, 'address'> | null {
  const auth = req.headers.authorization;
  if (auth && /^basic /i.test(auth)) {
    const decoded = Buffer.from(auth.slice(6).trim(), 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    if (colon > 0) {
      const clientId = safeDecode(decoded.slice(0, colon));
      const secret = safeDecode(decoded.slice(colon + 1));
      if (clientId && secret) return { clientId, secret, basic: true };
    }
  }
  const body = (req.body ?? {}) as Record<string, unknown>;
  const bodyId = str(body.client_id);
  const bodySecret = str(body.client_secret) ?? str(body.secret);
  if (bodyId && bodySecret) return { clientId: bodyId, secret: bodySecret, basic: false };
  const headerId = str(req.headers['client_id']);
  const headerSecret = str(req.headers['client_secret']);
  if (headerId && headerSecret) return { clientId: headerId, secret: headerSecret, basic: false };
  return null;
}

function safeDecode(s: string): string | undefined {
  try {
    return decodeURIComponent(s.replace(/\+/g, ' '));
  } catch {
    return undefined;
  }
}

/** Parameter decorator: the client credentials presented on this request, or null. */
export const ClientCredentials = createParamDecorator(
  (_data: unknown, context: ExecutionContext): PresentedClientCredentials | null =>
    presentedClientCredentials(context.switchToHttp().getRequest<Request>()),
);
