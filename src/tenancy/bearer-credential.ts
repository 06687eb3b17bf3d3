import type { ExecutionContext } from '@nestjs/common';
import { ExecutionContextHost } from '@nestjs/core/helpers/execution-context-host';
import { AuthGuard, PassportStrategy } from '@nestjs/passport';
import passport from 'passport';
import { Strategy } from 'passport-http-bearer';
import { OperationOutcomeError } from '@app/fhir';
import type { AccessTokenClaims, IdentityLookup, TenantClient } from './identity-lookup';

/** What a valid bearer token stands for: its claims and its client, active and not revoked. */
export interface BearerIdentity {
  claims: AccessTokenClaims;
  client: TenantClient;
}

/** The request passport sees: only the token's header, so no other form (a query or body `access_token`) is read. */
interface BearerView {
  headers: { authorization: string };
  user?: BearerIdentity;
}

/** 401 with a Bearer challenge (RFC 6750 §3). */
export function unauthorized(
  message: string,
  error?: 'invalid_request' | 'invalid_token',
): OperationOutcomeError {
  const challenge = error ? `Bearer realm="fhir", error="${error}"` : 'Bearer realm="fhir"';
  return new OperationOutcomeError('login', message, {
    status: 401,
    headers: { 'WWW-Authenticate': challenge },
  });
}

/*
 * A token's three checks, in this order: its signature and expiry, its client, its family. Each
 * takes what its lookup found and refuses as both paths below refuse (passport's strategy, and
 * the cached path that answers without it).
 */
function validClaims(claims: AccessTokenClaims | null): AccessTokenClaims {
  if (!claims) throw unauthorized('the access token is invalid or expired', 'invalid_token');
  return claims;
}

function activeClient(client: TenantClient | null): TenantClient {
  if (!client) throw unauthorized('the client of this token is unknown or disabled', 'invalid_token');
  return client;
}

function notRevoked(revoked: boolean): void {
  if (revoked)
    throw unauthorized('the access token was revoked (its refresh token was reused)', 'invalid_token');
}

/** passport-http-bearer's strategy, registered with passport under `name`, checking tokens with `identity`. */
function bearerStrategy(name: string, identity: IdentityLookup): object {
  class BearerTokenStrategy extends PassportStrategy(Strategy, name) {
    /** The token's signature (checked once per token, IdentityLookup caches it) and expiry, its client and its family. */
    async validate(token: string): Promise<BearerIdentity> {
      const claims = validClaims(identity.verifyAccessToken(token));
      const client = activeClient(await identity.findActiveClient(claims.clientId));
      if (claims.family !== undefined)
        notRevoked(await identity.isFamilyRevoked(client.clientId, claims.family));
      return { claims, client };
    }
  }
  return new BearerTokenStrategy();
}

/** @nestjs/passport's guard for the strategy `name`; failures keep their OperationOutcome. */
function bearerGuard(name: string): { canActivate(context: ExecutionContext): unknown } {
  class BearerTokenGuard extends AuthGuard(name) {
    override handleRequest<T>(error: unknown, user: T | false): T {
      if (error) throw error;
      // the resolver hands passport a well-formed header: a strategy failure without an error is a bad token
      if (!user) throw unauthorized('the access token is invalid or expired', 'invalid_token');
      return user;
    }
  }
  return new BearerTokenGuard();
}

let strategies = 0;

/**
 * The bearer credential form (docs/api.md §2) resolved by passport: a `passport-http-bearer` strategy
 * through `@nestjs/passport`'s guard, run by the tenant resolver inside the one guard layer. Each
 * app registers its own strategy name, so apps of one process (tests) never check each other's tokens.
 */
export class BearerCredential {
  private readonly name = `fhir-bearer-${++strategies}`;
  private readonly guard = bearerGuard(this.name);

  constructor(private readonly identity: IdentityLookup) {
    bearerStrategy(this.name, identity);
  }

  /**
   * The identity of a token this process verified recently, when the caches also know its client
   * and its family: the strategy's checks on what the caches hold, answered at once (an app sends
   * one token for many requests; passport's round through `AuthGuard` costs promises and an
   * execution context per request). `undefined` when any of them needs a lookup: then `identify`.
   * A refusal is the strategy's, with the same 401.
   */
  identifyCached(token: string): BearerIdentity | undefined {
    const verified = this.identity.cachedAccessToken(token);
    if (verified === undefined) return undefined;
    const claims = validClaims(verified);
    const found = this.identity.cachedActiveClient(claims.clientId);
    if (found === undefined) return undefined;
    const client = activeClient(found);
    if (claims.family !== undefined) {
      const revoked = this.identity.cachedFamilyRevoked(client.clientId, claims.family);
      if (revoked === undefined) return undefined;
      notRevoked(revoked);
    }
    return { claims, client };
  }

  /** The identity of `token` (taken from a well-formed `Authorization: Bearer` header) by passport, or the 401 it gets. */
  async identify(token: string): Promise<BearerIdentity> {
    const view: BearerView = { headers: { authorization: `Bearer ${token}` } };
    // AuthGuard.canActivate is async: it settles once the strategy has
    await this.guard.canActivate(new ExecutionContextHost([view, {}]));
    return view.user!;
  }

  /** The app is closing: its strategy leaves passport. */
  onModuleDestroy(): void {
    passport.unuse(this.name);
  }
}
