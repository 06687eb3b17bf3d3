import { randomUUID } from 'crypto';
import { Inject, Injectable, Logger } from '@nestjs/common';
import { JwtService } from '@nestjs/jwt';
import { SETTINGS } from '../../../config/config.module';
import { Settings } from '../../../config/settings';
import { TtlCache } from '../ttl-cache';
import { loadSigningKey, SigningKey } from './signing-key';

/** `token_use` tells access tokens from id tokens: an id_token is never accepted as access token. */
type TokenUse = 'access' | 'id';

/** What a valid access token says (docs/api.md §2, §4: a user token or a client-level token). */
export interface VerifiedAccessToken {
  clientId: string;
  /** service_user_id, or null for a client-level (program realm) token. */
  userId: number | null;
  scopes: string[];
  customer?: string;
  realm?: string;
  jti: string;
  /** Expiry, seconds since the epoch. */
  exp: number;
  /** Refresh-token family the token was issued with (user tokens): revoked with the family. */
  family?: string;
  /** A SMART App Launch token: the app a member authorized, their Patient, the grant (revocable). */
  launch?: LaunchClaim;
}

/** The `smart` claim of a SMART App Launch access token (the member is `sub` of the plan `client_id`). */
export interface LaunchClaim {
  readonly app: string;
  readonly patient?: string;
  readonly grant: string;
}

interface AccessClaims {
  sub: string;
  client_id: string;
  scope: string;
  token_use: TokenUse;
  sub_type: 'user' | 'client';
  customer?: string;
  realm?: string;
  /** Refresh-token family (user tokens). */
  fam?: string;
  smart?: LaunchClaim;
  jti: string;
  exp: number;
}

/**
 * How long a verified access token is remembered (by its exact text; expiry is checked again on
 * every use). An RS256 verification costs ~0.2 ms of CPU, a large share of a point read's budget;
 * apps send the same token for many requests. Only valid tokens are cached, so garbage tokens
 * cannot crowd the cache; the size bound caps its memory (~1 KB per token).
 */
const VERIFIED_TOKEN_CACHE_MS = 60_000;
const CANONICAL_USER_ID = /^[1-9]\d{0,15}$/;
const VERIFIED_TOKEN_CACHE_SIZE = 10_000;

/**
 * Signs and verifies the service's JWTs (RS256 only; iss, aud and exp checked on verify). The
 * public key is a parsed KeyObject so that a verification is one RSA operation, and a verified
 * token is remembered for a minute. Access tokens are self-contained until expiry: the guard does not look the user
 * up again (users are never deleted; a disabled client is checked through a short cache).
 */
@Injectable()
export class TokenService {
  private loaded?: { key: SigningKey; jwt: JwtService };
  private readonly verified = new TtlCache<VerifiedAccessToken>(
    VERIFIED_TOKEN_CACHE_MS,
    VERIFIED_TOKEN_CACHE_SIZE,
  );

  constructor(@Inject(SETTINGS) private readonly settings: Settings) {}

  /**
   * Loaded on first use, not at construction: CLI commands that never touch tokens then neither
   * create the development key nor log its warning (CLI stdout carries results only).
   */
  private get signer(): { key: SigningKey; jwt: JwtService } {
    if (!this.loaded) {
      const { jwt: cfg, dataDir } = this.settings;
      const key = loadSigningKey(cfg.privateKeyPem, dataDir, new Logger('Tokens'));
      const jwt = new JwtService({
        privateKey: key.privateKey,
        publicKey: key.publicKey,
        signOptions: { algorithm: 'RS256', keyid: key.kid, issuer: cfg.issuer },
        verifyOptions: { algorithms: ['RS256'], issuer: cfg.issuer },
      });
      this.loaded = { key, jwt };
    }
    return this.loaded;
  }

  get accessTokenTtlSeconds(): number {
    return this.settings.accessTokenTtlSeconds;
  }

  /** The JSON Web Key Set publishing the verification key. */
  jwks(): { keys: Record<string, string>[] } {
    return { keys: [this.signer.key.jwk] };
  }

  /** `family`: the refresh-token family issued alongside, so that revoking it recalls this token too. */
  signUserAccessToken(clientId: string, userId: number, scopes: readonly string[], family: string): string {
    return this.signAccess(
      { sub: String(userId), client_id: clientId, sub_type: 'user', fam: family },
      scopes,
    );
  }

  /**
   * A SMART App Launch access token: a user token of (plan, member) whose `scope` is what the member
   * granted, plus `smart` (the app, the member's Patient, the grant that revokes it).
   */
  signLaunchAccessToken(
    planClientId: string,
    userId: number,
    scopes: readonly string[],
    launch: LaunchClaim,
  ): string {
    const smart: LaunchClaim = {
      app: launch.app,
      grant: launch.grant,
      ...(launch.patient ? { patient: launch.patient } : {}),
    };
    return this.signAccess({ sub: String(userId), client_id: planClientId, sub_type: 'user', smart }, scopes);
  }

  /**
   * The id_token of a SMART launch (OpenID Connect Core §2): audience the app, `fhirUser` the
   * member's Patient URL when the app asked for `fhirUser`, `nonce` echoed.
   */
  signLaunchIdToken(
    appClientId: string,
    userId: number,
    appUserId: string,
    extra: { fhirUser?: string; nonce?: string },
  ): string {
    const now = Math.floor(Date.now() / 1000);
    return this.signer.jwt.sign(
      {
        token_use: 'id' satisfies TokenUse,
        auth_time: now,
        preferred_username: appUserId,
        ...(extra.fhirUser ? { fhirUser: extra.fhirUser } : {}),
        ...(extra.nonce ? { nonce: extra.nonce } : {}),
      },
      { subject: String(userId), audience: appClientId, expiresIn: this.settings.accessTokenTtlSeconds },
    );
  }

  signClientAccessToken(
    clientId: string,
    scopes: readonly string[],
    extra: { customer: string; realm: string },
  ): string {
    return this.signAccess({ sub: clientId, client_id: clientId, sub_type: 'client', ...extra }, scopes);
  }

  /** OpenID Connect id_token: audience is the client (OIDC Core §2), so it fails `aud` as access. */
  signIdToken(clientId: string, userId: number, appUserId: string): string {
    const now = Math.floor(Date.now() / 1000);
    return this.signer.jwt.sign(
      { token_use: 'id' satisfies TokenUse, auth_time: now, preferred_username: appUserId },
      { subject: String(userId), audience: clientId, expiresIn: this.settings.accessTokenTtlSeconds },
    );
  }

  /** The claims of a valid access token, or null (bad signature, algorithm, iss, aud, expired, id_token). */
  verifyAccessToken(token: string): VerifiedAccessToken | null {
    const cached = this.cachedAccessToken(token);
    if (cached !== undefined) return cached;
    const verified = this.verifyUncached(token);
    if (verified) {
      // Shared by every request with this token: frozen so that no caller can alter it for the others.
      Object.freeze(verified.scopes);
      this.verified.set(token, Object.freeze(verified));
    }
    return verified;
  }

  /** What `verifyAccessToken` answers for a token this process verified recently (expiry checked again); undefined for any other. */
  cachedAccessToken(token: string): VerifiedAccessToken | null | undefined {
    const cached = this.verified.get(token);
    if (cached === undefined) return undefined;
    return cached.exp * 1000 > Date.now() ? cached : null;
  }

  private verifyUncached(token: string): VerifiedAccessToken | null {
    let claims: AccessClaims;
    try {
      claims = this.signer.jwt.verify<AccessClaims>(token, { audience: this.settings.jwt.audience });
    } catch {
      return null;
    }
    if (claims.token_use !== 'access' || typeof claims.client_id !== 'string') return null;
    // Every access token we issue expires: one without `exp` (jsonwebtoken would accept it
    // forever) is not ours.
    if (typeof claims.exp !== 'number' || !Number.isFinite(claims.exp)) return null;
    let userId: number | null = null;
    if (claims.sub_type === 'user') {
      // The canonical decimal form we write ("7"), never "0x7", "7.0", " 7" or "1e1".
      if (typeof claims.sub !== 'string' || !CANONICAL_USER_ID.test(claims.sub)) return null;
      userId = Number(claims.sub);
      if (!Number.isSafeInteger(userId)) return null;
    } else if (claims.sub_type !== 'client' || claims.sub !== claims.client_id) {
      return null;
    }
    const launch = launchClaim(claims.smart);
    // a launch token always names its grant: one that does not cannot be revoked, so it is not ours
    if (claims.smart !== undefined && (!launch || userId === null)) return null;
    return {
      clientId: claims.client_id,
      userId,
      scopes: typeof claims.scope === 'string' ? claims.scope.split(' ').filter(Boolean) : [],
      customer: claims.customer,
      realm: claims.realm,
      jti: claims.jti,
      exp: claims.exp,
      ...(typeof claims.fam === 'string' ? { family: claims.fam } : {}),
      ...(launch ? { launch } : {}),
    };
  }

  private signAccess(
    claims: Omit<AccessClaims, 'jti' | 'exp' | 'scope' | 'token_use'>,
    scopes: readonly string[],
  ) {
    return this.signer.jwt.sign(
      { ...claims, scope: scopes.join(' '), token_use: 'access' satisfies TokenUse },
      {
        audience: this.settings.jwt.audience,
        expiresIn: this.settings.accessTokenTtlSeconds,
        jwtid: randomUUID(),
      },
    );
  }
}

function launchClaim(raw: unknown): LaunchClaim | undefined {
  if (typeof raw !== 'object' || raw === null) return undefined;
  const { app, patient, grant } = raw as Record<string, unknown>;
  if (typeof app !== 'string' || typeof grant !== 'string') return undefined;
  if (patient !== undefined && typeof patient !== 'string') return undefined;
  return Object.freeze({ app, grant, ...(patient ? { patient } : {}) });
}
