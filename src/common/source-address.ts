import type { Request } from 'express';

/** The request's source address as Express sees it (the forwarded one when TRUST_PROXY trusts the hop). */
export function sourceAddress(req: Request): string {
  return req.ip ?? req.socket?.remoteAddress ?? 'unknown';
}
