import { createHash, randomBytes } from 'crypto';
import { Inject, Injectable, Logger } from '@nestjs/common';
import { errors, generators } from 'openid-client';
import { SETTINGS } from '../../../config/config.module';
import { Settings } from '../../../config/settings';
import { UsersService } from '../../users/users.service';
import { ClientsService } from '../clients/clients.service';
import { FederatedLoginsRepository } from './federated-logins.repository';
import { ProviderClients, ProviderUnavailableError } from './provider-clients';

/** Path of the provider's redirect URI on the auth host (the plan registers it at its provider). */
export const FEDERATED_CALLBACK_PATH = '/oauth2/member/federated/callback';
/** A member has this long at the provider before the login is forgotten. */
const LOGIN_TTL_MS = 10 * 60_000;

/**
 * Why a federated sign-in did not name a member. `tx` is known when the callback could be tied
 * to a login this browser started: the app is then told the RFC 6749 §4.1.2.1 `error`; without it
 * nothing says where to send the member, and they see an error page.
 */
export interface FederatedFailure {
  ok: false;
  tx?: string;
  error: 'access_denied' | 'temporarily_unavailable' | 'server_error' | 'invalid_request';
  description: string;
}
export type FederatedResult =
  { ok: true; tx?: string; planClientId: string; userId: number } | FederatedFailure;

export interface FederatedStart {
  /** The provider's authorization URL to send the member to. */
  url: string;
}

/** Thrown by `begin` when the plan has no federated sign-in (a page error, not the app's). */
export class NotFederatedError extends Error {}

/**
 * Federated member sign-in: the authorization code flow with PKCE at the plan's own OpenID
 * Connect provider (discovery from the issuer; state, nonce and the ID token's signature checked
 * by openid-client against the provider's JWKS), then the member named by the plan's claim.
 * A member must already exist in the plan (created through user management): the provider proves
 * who signs in, the plan decides who is a member, so an unknown member is refused, not created.
 */
@Injectable()
export class MemberFederationService {
  private readonly logger = new Logger(MemberFederationService.name);
  private readonly providers: ProviderClients;

  constructor(
    @Inject(SETTINGS) settings: Settings,
    private readonly clients: ClientsService,
    private readonly users: UsersService,
    private readonly logins: FederatedLoginsRepository,
  ) {
    this.providers = new ProviderClients(`${settings.urls.auth}${FEDERATED_CALLBACK_PATH}`);
  }

  /**
   * Starts a sign-in at plan `planClientId`'s provider, for the app's authorization transaction
   * `tx` (or, without one, for the member's connected-apps page). `browser` is the secret of the
   * browser-binding cookie: only the browser holding it can finish this login.
   * Throws NotFederatedError or ProviderUnavailableError.
   */
  async begin(planClientId: string, tx: string | undefined, browser: string): Promise<FederatedStart> {
    const settings = await this.clients.memberSignInWithSecret(planClientId);
    if (settings?.mode !== 'federated') throw new NotFederatedError('this plan signs its members in here');
    const client = await this.providers.client(settings);
    const state = generators.state();
    const nonce = generators.nonce();
    const verifier = generators.codeVerifier();
    await this.logins.insert({
      _id: sha256(state),
      ...(tx !== undefined ? { tx } : {}),
      plan: planClientId,
      issuer: settings.issuer,
      nonce,
      verifier,
      browser: sha256(browser),
      expiresAt: new Date(Date.now() + LOGIN_TTL_MS),
    });
    const url = client.authorizationUrl({
      scope: settings.scope,
      state,
      nonce,
      code_challenge: generators.codeChallenge(verifier),
      code_challenge_method: 'S256',
    });
    return { url };
  }

  /** Finishes a login from the provider's redirect (`query` as received) in the browser holding `browser`. */
  async finish(query: Record<string, unknown>, browser: string | undefined): Promise<FederatedResult> {
    const params = stringParams(query);
    const state = params.state;
    if (!state) return refused('the provider answered without state');
    const login = await this.logins.take(sha256(state));
    if (!login)
      return refused('this sign-in is unknown, expired or already finished: start again from the app');
    if (!browser || sha256(browser) !== login.browser) {
      return refused('this sign-in was started in another browser: start again from the app');
    }
    const tx = login.tx;
    const settings = await this.clients.memberSignInWithSecret(login.plan);
    if (settings?.mode !== 'federated' || settings.issuer !== login.issuer) {
      return { ok: false, tx, error: 'access_denied', description: "the plan's sign-in settings changed" };
    }
    let claims: Record<string, unknown>;
    try {
      const client = await this.providers.client(settings);
      const tokens = await client.callback(client.metadata.redirect_uris![0], params, {
        state,
        nonce: login.nonce,
        code_verifier: login.verifier,
        response_type: 'code',
      });
      claims = tokens.claims();
    } catch (e) {
      return { ok: false, tx, ...this.providerFailure(e, login.plan) };
    }
    const appUserId = claimValue(claims[settings.claim]);
    if (appUserId === undefined) {
      return {
        ok: false,
        tx,
        error: 'access_denied',
        description: `the provider's ID token has no ${settings.claim}`,
      };
    }
    const member = await this.users.findUserByAppUserId(login.plan, appUserId);
    if (!member || !member.active) {
      return {
        ok: false,
        tx,
        error: 'access_denied',
        description: 'the signed-in person is not a member of this plan',
      };
    }
    return { ok: true, tx, planClientId: login.plan, userId: member.service_user_id };
  }

  /** RFC 6749 §4.1.2.1 error for what went wrong at (or on the way to) the provider. */
  private providerFailure(e: unknown, plan: string): Omit<FederatedFailure, 'ok' | 'tx'> {
    if (e instanceof errors.OPError) {
      // the provider's own answer, e.g. the member cancelled (access_denied) or a refused code
      if (e.error === 'access_denied' || e.error === 'login_required' || e.error === 'consent_required') {
        return { error: 'access_denied', description: "sign-in at the plan's provider was not completed" };
      }
      this.logger.warn(`plan ${plan}: the provider answered ${e.error ?? 'an error'}`);
      return { error: 'server_error', description: "the plan's provider refused the sign-in" };
    }
    if (e instanceof errors.RPError) {
      // a check failed (signature, nonce, issuer, audience): nothing from that answer is trusted
      this.logger.warn(`plan ${plan}: the provider's answer failed a check: ${e.message}`);
      return { error: 'access_denied', description: "the plan's provider's answer did not pass its checks" };
    }
    if (!(e instanceof ProviderUnavailableError))
      this.logger.warn(`plan ${plan}: provider call failed: ${String(e)}`);
    return { error: 'temporarily_unavailable', description: "the plan's provider cannot be reached" };
  }
}

function refused(description: string): FederatedFailure {
  return { ok: false, error: 'invalid_request', description };
}

/** The provider's query parameters, first value of each (a repeated parameter is not honoured). */
function stringParams(query: Record<string, unknown>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [key, value] of Object.entries(query)) {
    const first = Array.isArray(value) ? value[0] : value;
    if (typeof first === 'string') out[key] = first;
  }
  return out;
}

/** A string or number claim as an app_user_id; any other shape names no member. */
function claimValue(value: unknown): string | undefined {
  if (typeof value === 'number' && Number.isFinite(value)) return String(value);
  if (typeof value === 'string' && value.trim() !== '' && value.length <= 500) return value;
  return undefined;
}

function sha256(value: string): string {
  return createHash('sha256').update(value).digest('base64url');
}

/** A fresh secret for the browser-binding cookie. */
export function newBrowserBinding(): string {
  return randomBytes(32).toString('base64url');
}
