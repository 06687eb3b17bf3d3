import { CanActivate, ExecutionContext, Injectable, UnauthorizedException } from '@nestjs/common';
import type { Request } from 'express';
import { sourceAddress } from '../../common/source-address';
import { ClientAuthenticator } from '../auth/rate-limit/client-authenticator';

type Fields = Record<string, unknown>;

/**
 * `{base_url}/connect/system/clinical` (docs/api.md §11) is for a client: its credentials come from
 * the headers, the form body or the query string (first found wins, in that order). A guard, so
 * authentication comes before the inputs are read: a caller without valid credentials learns
 * nothing about them (401, never a 400).
 */
@Injectable()
export class ClinicalClientGuard implements CanActivate {
  constructor(private readonly clientAuth: ClientAuthenticator) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const req = context.switchToHttp().getRequest<Request>();
    const body = typeof req.body === 'object' && req.body !== null ? (req.body as Fields) : {};
    const { clientId, clientSecret } = presented(req.headers, body, req.query);
    const client =
      typeof clientId === 'string' && typeof clientSecret === 'string'
        ? await this.clientAuth.authenticate(clientId, clientSecret, sourceAddress(req))
        : null;
    if (!client) {
      throw new UnauthorizedException({
        error: 'invalid_client',
        message: 'client_id and client_secret are required and must be valid (headers, query or form body)',
      });
    }
    return true;
  }
}

function presented(...sources: Fields[]): { clientId?: unknown; clientSecret?: unknown } {
  for (const source of sources) {
    if (source.client_id !== undefined || source.client_secret !== undefined) {
      return { clientId: source.client_id, clientSecret: source.client_secret };
    }
  }
  return {};
}
