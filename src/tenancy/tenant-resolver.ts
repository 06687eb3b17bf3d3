import { Inject, Injectable } from '@nestjs/common';
import type { Request } from 'express';
import { OperationOutcomeError } from '@app/fhir';
import { sourceAddress } from '../common/source-address';
import { BearerCredential, type BearerIdentity, unauthorized } from './bearer-credential';
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

  /**
   * A bearer token this process has seen recently resolves at once (its checks on the caches,
   * BearerCredential.identifyCached): no promise; any form that needs a lookup resolves later.
   */
  resolve(req: Request, opts: TenantOptions = {}): TenantContext | Promise<TenantContext> {
    const isWrite = !READ_METHODS.has(req.method.toUpperCase()) && !opts.readRoute;
    const authorization = req.headers.authorization;
    if (authorization && (header(req, 'client_id') || header(req, 'client_secret'))) {
      // two credential forms at once: refuse rather than guess which one the caller meant
      throw OperationOutcomeError.invalid(
        'send one credential form: Authorization: Bearer, or the client_id/client_secret headers, not both',
      );
    }
    const resolved = authorization ? this.fromBearer(req, authorization) : this.fromClientHeaders(req, opts);
    return resolved instanceof Promise
      ? resolved.then((ctx) => allowed(ctx, opts, isWrite))
      : allowed(resolved, opts, isWrite);
  }

  private fromBearer(req: Request, authorization: string): TenantContext | Promise<TenantContext> {
    const match = /^Bearer\s+([A-Za-z0-9\-_.~+/]+=*)\s*$/i.exec(authorization);
    if (!match)
      throw unauthorized('the Authorization header must be "Bearer <access token>"', 'invalid_request');
    // passport-http-bearer: signature and expiry, client, revoked family (BearerCredential), or
    // the same checks on what the caches hold
    const cached = this.bearer.identifyCached(match[1]);
    if (cached !== undefined) return this.fromIdentity(req, cached);
    return this.bearer.identify(match[1]).then((identity) => this.fromIdentity(req, identity));
  }

  private fromIdentity(
    req: Request,
    { claims, client }: BearerIdentity,
  ): TenantContext | Promise<TenantContext> {
    if (claims.userId !== null) {
      if (header(req, 'x-service-user-id') || header(req, 'x-app-user-id')) {
        throw OperationOutcomeError.invalid(
          'a user token already names its user: x-service-user-id / x-app-user-id go with client credentials only',
        );
      }
      const ctx: TenantContext = {
        clientId: client.clientId,
        userId: claims.userId,
        scopes: claims.scopes,
        form: 'user-token',
        ...(claims.launch ? { launch: claims.launch } : {}),
      };
      if (!claims.launch) return ctx;
      const active = this.identity.cachedLaunchGrantActive(claims.launch);
      if (active !== undefined) return launchActive(active, ctx);
      return this.identity.isLaunchGrantActive(claims.launch).then((looked) => launchActive(looked, ctx));
    }
    // A client-level (program realm) token may narrow itself to one user with the user headers.
    const clientToken = (userId: number | null): TenantContext => ({
      clientId: client.clientId,
      userId,
      scopes: claims.scopes,
      form: 'client-token',
      customer: client.customer,
    });
    const userId = this.userFromHeaders(req, client, true);
    return userId instanceof Promise ? userId.then(clientToken) : clientToken(userId);
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
  private userFromHeaders(
    req: Request,
    client: TenantClient,
    optional: boolean,
  ): number | null | Promise<number | null> {
    const serviceUserId = header(req, 'x-service-user-id');
    const appUserId = header(req, 'x-app-user-id');
    if (serviceUserId !== undefined) {
      if (serviceUserId.toLowerCase() === 'client') return null;
      if (!/^\d{1,15}$/.test(serviceUserId) || Number(serviceUserId) <= 0) {
        throw OperationOutcomeError.invalid(
          'x-service-user-id must be a numeric service_user_id or "client"',
        );
      }
      return this.identity.findUserId(client.clientId, Number(serviceUserId)).then((user) => {
        if (user === null) throw OperationOutcomeError.notFound(`no user ${serviceUserId}`);
        return user;
      });
    }
    if (appUserId !== undefined) {
      return this.identity.findUserIdByAppUserId(client.clientId, appUserId).then((user) => {
        if (user === null) throw OperationOutcomeError.notFound(`no user "${appUserId}"`);
        return user;
      });
    }
    if (optional) return null;
    throw OperationOutcomeError.invalid('the header x-service-user-id or x-app-user-id is required');
  }
}

/** A launch token stands only while the member's grant does (revoking it stops its tokens at once). */
function launchActive(active: boolean, ctx: TenantContext): TenantContext {
  if (!active) {
    throw unauthorized(
      "the access token was revoked (the member withdrew the app's access)",
      'invalid_token',
    );
  }
  return ctx;
}

/** What the resolved credentials may do on this request: a read-only scope, a client-wide context. */
function allowed(ctx: TenantContext, opts: TenantOptions, isWrite: boolean): TenantContext {
  if (isWrite && isReadOnly(ctx)) {
    throw new OperationOutcomeError('forbidden', `the scope "${ctx.scopes.join(' ')}" allows reading only`, {
      status: 403,
      headers: { 'WWW-Authenticate': 'Bearer error="insufficient_scope"' },
    });
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
