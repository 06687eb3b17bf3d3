import { randomBytes, randomUUID } from 'crypto';
import { Inject, Injectable } from '@nestjs/common';
import { SETTINGS } from '../../../config/config.module';
import { Settings } from '../../../config/settings';
import { ClientScope } from '../../../tenancy/tenant-context';
import { ClientRecord } from '../clients/client.schema';
import { sha256 } from '../clients/secret-hash';
import { TtlCache } from '../ttl-cache';
import { OAuthError } from '../oauth/oauth-error';
import { GrantsRepository } from './grants.repository';
import { CLIENT_TOKEN_SCOPES, parseScope, USER_TOKEN_SCOPES, withDefaultResourceScope } from './scopes';
import { TokenService } from './token.service';

/** The token response of docs/api.md §4 / RFC 6749 §5.1. */
export interface TokenSet {
  access_token: string;
  token_type: 'Bearer';
  expires_in: number;
  scope: string;
  refresh_token?: string;
  id_token?: string;
}

export interface GrantUser {
  userId: number;
  appUserId: string;
}

/** docs/api.md §2: the configured scope of an application's user tokens. */
const DEFAULT_USER_SCOPES = ['user/*.*'];

/** Which realm each program token endpoint serves, and the programs that unlock it (docs/api.md §4). */
export const REALM_PROGRAMS = {
  'epa-uat': ['epa'],
  'epa-prod': ['epa'],
  'dev-portal': ['provider-access', 'p2p'],
} as const;
export type Realm = keyof typeof REALM_PROGRAMS;

/**
 * A client-level token (client_credentials, with a secret or a signed assertion) needs a program
 * of the realm it is asked at; at `/oauth2/token` (no realm), a program of any realm. A client of
 * `patient-access` only gets user tokens, whatever way it authenticates.
 */
export function requireClientTokenProgram(client: ClientRecord, realm?: Realm): void {
  const allowed: readonly string[] = realm
    ? REALM_PROGRAMS[realm]
    : [...new Set(Object.values(REALM_PROGRAMS).flat())];
  if (!client.programs.some((p) => allowed.includes(p))) {
    throw new OAuthError(
      'unauthorized_client',
      `the client has none of the programs ${realm ? 'this realm serves' : 'that give client-level tokens'} (${allowed.join(', ')})`,
    );
  }
}

/**
 * How long this process trusts its last answer to "is this token family revoked?". A revocation
 * made here is seen at once; one made by another instance within this time.
 */
const REVOCATION_CACHE_MS = 5_000;

const familyCacheKey = (clientId: string, family: string) => `${clientId}|${family}`;

function reused(message = 'the credential was already used; what it issued is revoked'): OAuthError {
  return new OAuthError('invalid_grant', message);
}

/** The OAuth flows: authorization codes, their exchange, refresh rotation, client credentials. */
@Injectable()
export class GrantService {
  constructor(
    @Inject(SETTINGS) private readonly settings: Settings,
    private readonly repo: GrantsRepository,
    private readonly tokens: TokenService,
  ) {}

  private readonly revokedFamilies = new TtlCache<boolean>(REVOCATION_CACHE_MS);

  /** Whether an access token's refresh-token family was revoked (the tenant guard asks per request). */
  async isFamilyRevoked(clientId: string, family: string): Promise<boolean> {
    const cached = this.cachedFamilyRevoked(clientId, family);
    if (cached !== undefined) return cached;
    const revoked = await this.repo.isFamilyRevoked({ clientId }, family);
    this.revokedFamilies.set(familyCacheKey(clientId, family), revoked);
    return revoked;
  }

  /** What `isFamilyRevoked` answers from its cache alone; undefined when it would ask the database. */
  cachedFamilyRevoked(clientId: string, family: string): boolean | undefined {
    return this.revokedFamilies.get(familyCacheKey(clientId, family));
  }

  /** Revokes the family's refresh tokens and every access token issued with it (RFC 9700 §4.14.2). */
  private async revokeFamily(client: ClientScope, family: string): Promise<void> {
    const until = new Date(Date.now() + this.settings.accessTokenTtlSeconds * 1000);
    await this.repo.revokeFamily(client, family, until);
    this.revokedFamilies.set(familyCacheKey(client.clientId, family), true);
  }

  get codeTtlSeconds(): number {
    return this.settings.authCodeTtlSeconds;
  }

  /** Scopes a user grant may ask for; throws invalid_scope (400) on unknown ones. */
  userScopes(raw: string | undefined): string[] {
    const { scopes, unknown } = parseScope(raw, USER_TOKEN_SCOPES);
    if (unknown.length > 0) throw new OAuthError('invalid_scope', `unknown scope(s): ${unknown.join(', ')}`);
    return withDefaultResourceScope(scopes, DEFAULT_USER_SCOPES);
  }

  /** A new single-use authorization code for this client's user, valid AUTH_CODE_TTL seconds. */
  async issueCode(scope: ClientScope, user: GrantUser, scopes: string[]): Promise<string> {
    const code = randomBytes(32).toString('base64url');
    await this.repo.insertCode(scope, {
      _id: sha256(code),
      u: user.userId,
      app_user_id: user.appUserId,
      scope: scopes,
      expiresAt: new Date(Date.now() + this.settings.authCodeTtlSeconds * 1000),
    });
    return code;
  }

  /** Access + refresh (+ id when `openid`) tokens for a user, starting a new family. */
  async issueUserTokens(scope: ClientScope, user: GrantUser, scopes: string[]): Promise<TokenSet> {
    return this.issueInFamily(scope, user, scopes, randomUUID());
  }

  /**
   * Tokens of `family`. The refresh token is stored first, then the family's revocation record is
   * read: a reuse racing with this issue either wrote its record before that read (this issue
   * fails, and its refresh token is revoked with the family) or revokes the family's refresh tokens
   * after this one was stored (revokeFamily writes the record, then revokes). Either way nothing
   * issued from a reused credential stays live.
   */
  private async issueInFamily(
    scope: ClientScope,
    user: GrantUser,
    scopes: string[],
    family: string,
    continued = false,
  ): Promise<TokenSet> {
    const refreshToken = randomBytes(32).toString('base64url');
    await this.repo.insertRefreshToken(scope, {
      _id: sha256(refreshToken),
      u: user.userId,
      app_user_id: user.appUserId,
      family,
      scope: scopes,
      expiresAt: new Date(Date.now() + this.settings.refreshTokenTtlSeconds * 1000),
    });
    if (continued && (await this.repo.isFamilyRevoked(scope, family))) {
      await this.revokeFamily(scope, family);
      throw reused();
    }
    const set: TokenSet = {
      access_token: this.tokens.signUserAccessToken(scope.clientId, user.userId, scopes, family),
      token_type: 'Bearer',
      expires_in: this.settings.accessTokenTtlSeconds,
      scope: scopes.join(' '),
      refresh_token: refreshToken,
    };
    if (scopes.includes('openid'))
      set.id_token = this.tokens.signIdToken(scope.clientId, user.userId, user.appUserId);
    return set;
  }

  /**
   * grant_type=authorization_code (RFC 6749 §4.1.3). Consumption is one conditional write: of
   * requests racing with one code the first wins; every other is a reuse, which revokes all that
   * the code issued (RFC 6749 §4.1.2, §10.5).
   */
  async exchangeCode(client: ClientRecord, code: string): Promise<TokenSet> {
    const hash = sha256(code);
    const family = randomUUID();
    const record = await this.repo.consumeCode(client, hash, family);
    if (!record) {
      const previous = await this.repo.findCode(client, hash);
      if (previous?.used) {
        if (previous.family) await this.revokeFamily(client, previous.family);
        throw reused('the code was already used; the tokens issued with it are revoked');
      }
      if (previous) throw new OAuthError('invalid_grant', 'the code has expired');
      throw new OAuthError('invalid_grant', 'the code is unknown, already used, or issued to another client');
    }
    return this.issueInFamily(
      client,
      { userId: record.u, appUserId: record.app_user_id },
      record.scope,
      family,
      true,
    );
  }

  /**
   * grant_type=refresh_token with rotation and reuse detection (RFC 9700 §4.14.2): consumption is
   * one conditional write; a used token presented again (also by a request racing the first)
   * revokes its whole family, the rotation the winner got included.
   */
  async refresh(client: ClientRecord, refreshToken: string): Promise<TokenSet> {
    const hash = sha256(refreshToken);
    const record = await this.repo.consumeRefreshToken(client, hash);
    if (!record) {
      const previous = await this.repo.findRefreshToken(client, hash);
      if (previous?.used) {
        await this.revokeFamily(client, previous.family);
        throw reused('the refresh token was already used; its token family is revoked');
      }
      if (previous && !previous.revoked)
        throw new OAuthError('invalid_grant', 'the refresh token has expired');
      throw new OAuthError(
        'invalid_grant',
        'the refresh token is unknown, revoked, or issued to another client',
      );
    }
    return this.issueInFamily(
      client,
      { userId: record.u, appUserId: record.app_user_id },
      record.scope,
      record.family,
      true,
    );
  }

  /** grant_type=client_credentials at a program realm: a client-level token, no user, no refresh. */
  clientCredentials(client: ClientRecord, realm: Realm, rawScope: string | undefined): TokenSet {
    requireClientTokenProgram(client, realm);
    // Provider Access and Payer-to-Payer only read data (docs/api.md §4 `user/*.rs`); ePA also submits it.
    const known =
      realm === 'dev-portal' ? CLIENT_TOKEN_SCOPES.filter((s) => !s.endsWith('.*')) : CLIENT_TOKEN_SCOPES;
    const { scopes, unknown } = parseScope(rawScope, known);
    if (unknown.length > 0) throw new OAuthError('invalid_scope', `unknown scope(s): ${unknown.join(', ')}`);
    const fallback = realm === 'dev-portal' ? ['bulk-data', 'user/*.rs'] : ['user/*.*'];
    const granted = withDefaultResourceScope(scopes, fallback);
    return {
      access_token: this.tokens.signClientAccessToken(client.clientId, granted, {
        customer: client.customer,
        realm,
      }),
      token_type: 'Bearer',
      expires_in: this.settings.accessTokenTtlSeconds,
      scope: granted.join(' '),
    };
  }
}
