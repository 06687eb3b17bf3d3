import { createHash, randomBytes } from 'crypto';
import { Inject, Injectable } from '@nestjs/common';
import { SETTINGS } from '../../../config/config.module';
import { Settings } from '../../../config/settings';
import { ClientRecord } from '../clients/client.schema';
import { ClientsService } from '../clients/clients.service';
import { sha256 } from '../clients/secret-hash';
import { OAuthError } from '../oauth/oauth-error';
import { requiredParam, type TokenRequestBody } from '../oauth/token-request.dto';
import { TokenSet } from '../tokens/grant.service';
import { TokenService } from '../tokens/token.service';
import { TtlCache } from '../ttl-cache';
import { LaunchRepository } from './launch.repository';
import { LaunchGrantDoc } from './launch.schemas';

/** The token response of a launch (SMART App Launch 2.2 §2.1.8): `patient` beside RFC 6749's fields. */
export interface LaunchTokenSet extends TokenSet {
  patient?: string;
}

/** How long this process trusts "this grant stands"; a revocation made here is seen at once. */
const GRANT_CACHE_MS = 5_000;
/** Refresh tokens of a launch live as long as a backend refresh token (REFRESH_TOKEN_TTL). */
const REFRESH_SCOPES = ['offline_access', 'online_access'];

/**
 * Codes, tokens, refresh, introspection and revocation of member grants (SMART App Launch). A grant
 * is one approval on the consent page; the code, every token and refresh token issued from it name
 * it, and revoking it (the member's connected-apps page, RFC 7009, a reused code or refresh token)
 * stops them all.
 */
@Injectable()
export class LaunchTokensService {
  private readonly activeGrants = new TtlCache<boolean>(GRANT_CACHE_MS);

  constructor(
    @Inject(SETTINGS) private readonly settings: Settings,
    private readonly repo: LaunchRepository,
    private readonly tokens: TokenService,
    private readonly clients: ClientsService,
  ) {}

  /** A single-use code for the grant, bound to the app, its redirect URI and PKCE challenge. */
  async issueCode(
    grant: LaunchGrantDoc,
    binding: { redirectUri: string; codeChallenge?: string; nonce?: string },
  ): Promise<string> {
    const code = randomBytes(32).toString('base64url');
    await this.repo.insertCredential(grant.app, sha256(code), {
      kind: 'code',
      grant: grant._id,
      scopes: grant.scopes,
      redirect_uri: binding.redirectUri,
      code_challenge: binding.codeChallenge,
      nonce: binding.nonce,
      expiresAt: new Date(Date.now() + this.settings.launchCodeTtlSeconds * 1000),
    });
    return code;
  }

  /** grant_type=authorization_code for an authenticated (or public, PKCE-bound) SMART app. */
  async exchangeCode(app: ClientRecord, body: TokenRequestBody): Promise<LaunchTokenSet> {
    const code = requiredParam(body.code, 'code');
    const hash = sha256(code);
    const record = await this.repo.consumeCredential(app.clientId, hash, 'code');
    if (!record) {
      const previous = await this.repo.findCredential(app.clientId, hash);
      if (previous?.kind === 'code' && previous.used) {
        await this.revoke(previous.grant, { app: app.clientId });
        throw new OAuthError(
          'invalid_grant',
          'the code was already used; the tokens issued with it are revoked',
        );
      }
      if (previous?.kind === 'code') throw new OAuthError('invalid_grant', 'the code has expired');
      throw new OAuthError('invalid_grant', 'the code is unknown, already used, or issued to another client');
    }
    // RFC 6749 §4.1.3: the redirect_uri of the authorization request, identical
    if (body.redirect_uri !== record.redirect_uri) {
      throw new OAuthError(
        'invalid_grant',
        'redirect_uri does not match the one of the authorization request',
      );
    }
    checkVerifier(record.code_challenge, body.code_verifier);
    const grant = await this.liveGrant(record.grant, app);
    return this.issueTokens(grant, record.scopes, record.nonce);
  }

  /**
   * grant_type=refresh_token with rotation; a `scope` may narrow what the grant gave, never widen
   * it (RFC 6749 §6). A used refresh token presented again revokes the grant.
   */
  async refresh(app: ClientRecord, body: TokenRequestBody): Promise<LaunchTokenSet> {
    const token = requiredParam(body.refresh_token, 'refresh_token');
    const hash = sha256(token);
    // the scope is checked before the token is used up: a refused widening costs the app nothing
    const presented = await this.repo.findCredential(app.clientId, hash);
    const asked = body.scope;
    const wanted = asked === undefined ? undefined : [...new Set(asked.split(' ').filter(Boolean))];
    if (presented?.kind === 'refresh' && wanted) {
      const beyond = wanted.filter((s) => !presented.scopes.includes(s));
      if (beyond.length > 0)
        throw new OAuthError(
          'invalid_scope',
          `scope(s) beyond what the member granted: ${beyond.join(', ')}`,
        );
    }
    const record = await this.repo.consumeCredential(app.clientId, hash, 'refresh');
    if (!record) {
      if (presented?.kind === 'refresh' && presented.used) {
        await this.revoke(presented.grant, { app: app.clientId });
        throw new OAuthError('invalid_grant', 'the refresh token was already used or revoked');
      }
      throw new OAuthError(
        'invalid_grant',
        'the refresh token is unknown, expired, or issued to another client',
      );
    }
    const scopes = wanted ?? record.scopes;
    const grant = await this.liveGrant(record.grant, app);
    return this.issueTokens(grant, scopes);
  }

  /** Whether the grant stands and its app is enabled (the tenant guard asks on every launch token). */
  async isGrantActive(launch: { readonly app: string; readonly grant: string }): Promise<boolean> {
    let active = this.activeGrants.get(launch.grant);
    if (active === undefined) {
      const grant = await this.repo.findGrant(launch.grant);
      active = grant !== null && !grant.revoked && grant.app === launch.app;
      this.activeGrants.set(launch.grant, active);
    }
    return active && (await this.clients.findActive(launch.app)) !== null;
  }

  /** What `isGrantActive` answers from the caches alone; undefined when it would ask the database. */
  cachedGrantActive(launch: { readonly app: string; readonly grant: string }): boolean | undefined {
    const active = this.activeGrants.get(launch.grant);
    if (active !== true) return active;
    const app = this.clients.cachedActive(launch.app);
    return app === undefined ? undefined : app !== null;
  }

  /** Revokes a grant (owner: the member, or the app); its tokens stop at once in this process. */
  async revoke(grantId: string, owner: { plan: string; u: number } | { app: string }): Promise<boolean> {
    const done = await this.repo.revokeGrant(grantId, owner);
    if (done) this.activeGrants.set(grantId, false);
    return done;
  }

  /**
   * RFC 7009: the caller's token (an access token of its grant, as the app or as the plan, or its
   * refresh token) stops working with everything issued with it. Unknown tokens are no error (§2.2).
   */
  async revokeToken(caller: ClientRecord, token: string): Promise<void> {
    const grant = await this.grantOfToken(caller, token);
    if (grant) await this.revoke(grant._id, { app: grant.app });
  }

  /** RFC 7662: what the token is, for the plan or the app it concerns; `{active:false}` otherwise. */
  async introspect(caller: ClientRecord, token: string): Promise<Record<string, unknown>> {
    const claims = this.tokens.verifyAccessToken(token);
    if (claims && !claims.launch) {
      // a backend token: its own client may ask
      if (claims.clientId !== caller.clientId) return { active: false };
      return {
        active: true,
        token_type: 'Bearer',
        scope: claims.scopes.join(' '),
        client_id: claims.clientId,
        exp: claims.exp,
        ...(claims.userId !== null ? { sub: String(claims.userId) } : {}),
      };
    }
    const grant = await this.grantOfToken(caller, token);
    if (!grant || !(await this.isGrantActive({ app: grant.app, grant: grant._id }))) return { active: false };
    return {
      active: true,
      token_type: claims ? 'Bearer' : 'refresh_token',
      scope: (claims?.scopes ?? grant.scopes).join(' '),
      client_id: grant.app,
      sub: String(grant.u),
      username: grant.app_user_id,
      ...(claims ? { exp: claims.exp } : {}),
      ...(grant.patient ? { patient: grant.patient } : {}),
    };
  }

  private async grantOfToken(caller: ClientRecord, token: string): Promise<LaunchGrantDoc | null> {
    const claims = this.tokens.verifyAccessToken(token);
    if (claims?.launch) {
      if (caller.clientId !== claims.launch.app && caller.clientId !== claims.clientId) return null;
      return this.repo.findGrant(claims.launch.grant);
    }
    if (claims) return null;
    const refresh = await this.repo.findCredential(caller.clientId, sha256(token));
    if (refresh?.kind !== 'refresh' || refresh.used || refresh.expiresAt <= new Date()) return null;
    return this.repo.findGrant(refresh.grant);
  }

  private async liveGrant(grantId: string, app: ClientRecord): Promise<LaunchGrantDoc> {
    const grant = await this.repo.findGrant(grantId);
    if (!grant || grant.revoked || grant.app !== app.clientId)
      throw new OAuthError('invalid_grant', 'the member revoked this grant');
    if (!(await this.clients.findActive(grant.plan)))
      throw new OAuthError('invalid_grant', 'the health plan of this grant is disabled');
    return grant;
  }

  private async issueTokens(
    grant: LaunchGrantDoc,
    scopes: string[],
    nonce?: string,
  ): Promise<LaunchTokenSet> {
    const launch = { app: grant.app, grant: grant._id, patient: grant.patient };
    const set: LaunchTokenSet = {
      access_token: this.tokens.signLaunchAccessToken(grant.plan, grant.u, scopes, launch),
      token_type: 'Bearer',
      expires_in: this.settings.accessTokenTtlSeconds,
      scope: scopes.join(' '),
      ...(grant.patient && scopes.includes('launch/patient') ? { patient: grant.patient } : {}),
    };
    if (scopes.some((s) => REFRESH_SCOPES.includes(s))) {
      const refreshToken = randomBytes(32).toString('base64url');
      await this.repo.insertCredential(grant.app, sha256(refreshToken), {
        kind: 'refresh',
        grant: grant._id,
        scopes,
        expiresAt: new Date(Date.now() + this.settings.refreshTokenTtlSeconds * 1000),
      });
      set.refresh_token = refreshToken;
    }
    if (scopes.includes('openid')) {
      const fhirUser =
        scopes.includes('fhirUser') && grant.patient
          ? `${this.settings.urls.base}/${grant.version}/Patient/${grant.patient}`
          : undefined;
      set.id_token = this.tokens.signLaunchIdToken(grant.app, grant.u, grant.app_user_id, {
        fhirUser,
        nonce,
      });
    }
    return set;
  }
}

/** RFC 7636 §4.6 with S256 only (plain is refused at authorize). */
function checkVerifier(challenge: string | undefined, verifier: string | undefined): void {
  if (challenge === undefined) {
    if (verifier !== undefined)
      throw new OAuthError(
        'invalid_grant',
        'code_verifier sent, but the authorization request had no code_challenge',
      );
    return;
  }
  if (verifier === undefined) throw new OAuthError('invalid_grant', 'code_verifier is required (PKCE)');
  if (!/^[A-Za-z0-9\-._~]{43,128}$/.test(verifier))
    throw new OAuthError(
      'invalid_grant',
      'code_verifier must be 43-128 unreserved characters (RFC 7636 §4.1)',
    );
  const computed = createHash('sha256').update(verifier).digest('base64url');
  if (computed !== challenge)
    throw new OAuthError('invalid_grant', 'code_verifier does not match the code_challenge');
}
