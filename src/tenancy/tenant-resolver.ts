import { Inject, Injectable } from '@nestjs/common';
import type { Request } from 'express';
import { OperationOutcomeError } from '@app/fhir';
import { sourceAddress } from '../common/source-address';
import { BearerCredential, unauthorized } from './bearer-credential';
import { IDENTITY_LOOKUP, type IdentityLookup, type TenantClient } from './identity-lookup';
import { isReadOnly, TenantContext } from './tenant-context';
import type { TenantOptions } from './tenant-options';

export type { TenantOptions } from './tenant-options';

/** docs/api.md §2, every form: full access to the one user or, on reads, to the client's users. */
const CLIENT_HEADER_SCOPES = ['user/*.*'] as const;
const READ_METHODS = new Set(['GET', 'HEAD']);

/**
 * Turns the credentials of a request into a `TenantContext` — the one place that does (docs/api.md §2). Every failure is an `OperationOutcomeError`, which the global filter answers as an
 * OperationOutcome on FHIR routes and as `{ error, message }` elsewhere.
 */
@Injectable()
export class TenantResolver {
  constructor(
    @Inject(IDENTITY_LOOKUP) private readonly identity: IdentityLookup,
    private readonly bearer: BearerCredential,
  ) {}

  async resolve(req: Request, opts: TenantOptions = {}): Promise<TenantContext> {
    const isWrite = !READ_METHODS.has(req.method.toUpperCase()) && !opts.readRoute;
    const authorization = req.headers.authorization;
    if (authorization && (header(req, 'client_id') || header(req, 'client_secret'))) {
      // two credential forms at once: refuse rather than guess which one the caller meant
      throw OperationOutcomeError.invalid(
        'send one credential form: Authorization: Bearer, or the client_id/client_secret headers, not both',
      );
    }
    const ctx = authorization
      ? await this.fromBearer(req, authorization)
      : await this.fromClientHeaders(req, opts);
    if (isWrite && isReadOnly(ctx)) {
      throw new OperationOutcomeError(
        'forbidden',
        `the scope "${ctx.scopes.join(' ')}" allows reading only`,
        {
          status: 403,
          headers: { 'WWW-Authenticate': 'Bearer error="insufficient_scope"' },
        },
      );
    }
    if (ctx.userId === null) {
      if (opts.userRequired || opts.clientWide === 'never') {
        throw OperationOutcomeError.invalid(
          'this request acts on one user: use a user token or x-service-user-id / x-app-user-id with a user id',
        );
      }
      if (isWrite) {
        throw OperationOutcomeError.invalid(
          'client-wide access (x-service-user-id: client, or a client-level token without a user) is for reads ' +
            'only: name one user with x-service-user-id or x-app-user-id',
        );
      }
    }
    return ctx;
  }

  private async fromBearer(req: Request, authorization: string): Promise<TenantContext> {
    const match = /^Bearer\s+([A-Za-z0-9\-_.~+/]+=*)\s*$/i.exec(authorization);
    if (!match)
      throw unauthorized('the Authorization header must be "Bearer <access token>"', 'invalid_request');
    // passport-http-bearer: signature and expiry, client, revoked family (BearerCredential)
    const { claims, client } = await this.bearer.identify(match[1]);
    if (claims.userId !== null) {
      if (header(req, 'x-service-user-id') || header(req, 'x-app-user-id')) {
        throw OperationOutcomeError.invalid(
          'a user token already names its user: x-service-user-id / x-app-user-id go with client credentials only',
        );
      }
      if (claims.launch && !(await this.identity.isLaunchGrantActive(claims.launch))) {
        throw unauthorized(
          "the access token was revoked (the member withdrew the app's access)",
          'invalid_token',
        );
      }
      return {
        clientId: client.clientId,
        userId: claims.userId,
        scopes: claims.scopes,
        form: 'user-token',
        ...(claims.launch ? { launch: claims.launch } : {}),
      };
    }
    // A client-level (program realm) token may narrow itself to one user with the user headers.
    const userId = await this.userFromHeaders(req, client, true);
    return {
      clientId: client.clientId,
      userId,
      scopes: claims.scopes,
      form: 'client-token',
      customer: client.customer,
    };
  }

  private async fromClientHeaders(req: Request, opts: TenantOptions): Promise<TenantContext> {
    const clientId = header(req, 'client_id');
    const secret = header(req, 'client_secret');
    if (!clientId || !secret) {
      throw credentialsRequired('access_token' in (req.query ?? {}));
    }
    if (opts.bearerOnly) throw unauthorized('this request takes Authorization: Bearer <token>');
    const client = await this.identity.authenticateClient(clientId, secret, sourceAddress(req));
    if (!client) throw unauthorized('unknown client, wrong secret, or disabled client');
    const userId = await this.userFromHeaders(req, client, opts.userHeaderOptional === true);
    return {
      clientId: client.clientId,
      userId,
      scopes: [...CLIENT_HEADER_SCOPES],
      form: 'client-headers',
      customer: client.customer,
    };
  }

  /** `x-service-user-id` (numeric or `client`) or `x-app-user-id`; a user of another client → 404. */
  private async userFromHeaders(
    req: Request,
    client: TenantClient,
    optional: boolean,
  ): Promise<number | null> {
    const serviceUserId = header(req, 'x-service-user-id');
    const appUserId = header(req, 'x-app-user-id');
    if (serviceUserId !== undefined) {
      if (serviceUserId.toLowerCase() === 'client') return null;
      if (!/^\d{1,15}$/.test(serviceUserId) || Number(serviceUserId) <= 0) {
        throw OperationOutcomeError.invalid(
          'x-service-user-id must be a numeric service_user_id or "client"',
        );
      }
      const user = await this.identity.findUserId(client.clientId, Number(serviceUserId));
      if (user === null) throw OperationOutcomeError.notFound(`no user ${serviceUserId}`);
      return user;
    }
    if (appUserId !== undefined) {
      const user = await this.identity.findUserIdByAppUserId(client.clientId, appUserId);
      if (user === null) throw OperationOutcomeError.notFound(`no user "${appUserId}"`);
      return user;
    }
    if (optional) return null;
    throw OperationOutcomeError.invalid('the header x-service-user-id or x-app-user-id is required');
  }
}

/** The 401 of a request without credentials (answered ahead of its body too: early-refusal.ts). */
export function credentialsRequired(tokenInQuery: boolean): OperationOutcomeError {
  const hint = tokenInQuery ? ' (tokens are not accepted in the query string)' : '';
  return unauthorized(
    `credentials required: Authorization: Bearer <token>, or headers client_id + client_secret${hint}`,
  );
}

function header(req: Request, name: string): string | undefined {
  const v = req.headers[name];
  const s = Array.isArray(v) ? v[0] : v;
  return s === undefined || s.trim() === '' ? undefined : s.trim();
}
