import { custom, Issuer, type BaseClient } from 'openid-client';
import { TtlCache } from '../ttl-cache';
import type { MemberSignInDoc } from './member-sign-in';

type Federated = Extract<MemberSignInDoc, { mode: 'federated' }>;

/**
 * A provider's discovery document is read again after this long: key rotations are followed by
 * the JWKS (openid-client refetches it for an unknown `kid`), an endpoint change by this TTL.
 */
const DISCOVERY_TTL_MS = 10 * 60_000;
/** A provider that does not answer within this time is treated as down (the member gets an error, not a hang). */
export const PROVIDER_TIMEOUT_MS = 10_000;

/** The provider could not be reached, or its discovery document is not one this server can use. */
export class ProviderUnavailableError extends Error {}

/**
 * openid-client `Client`s of the plans' providers (OpenID Connect Discovery 1.0 from the issuer),
 * one per (plan, settings), so a changed secret or issuer takes effect at once.
 */
export class ProviderClients {
  private readonly issuers = new TtlCache<Promise<Issuer<BaseClient>>>(DISCOVERY_TTL_MS);

  constructor(private readonly callbackUrl: string) {
    Issuer[custom.http_options] = (_url, options) => ({ ...options, timeout: PROVIDER_TIMEOUT_MS });
  }

  async client(settings: Federated): Promise<BaseClient> {
    const issuer = await this.discover(settings.issuer);
    const client = new issuer.Client({
      client_id: settings.client_id,
      client_secret: settings.client_secret,
      redirect_uris: [this.callbackUrl],
      response_types: ['code'],
      token_endpoint_auth_method: 'client_secret_basic',
    });
    client[custom.http_options] = (_url, options) => ({ ...options, timeout: PROVIDER_TIMEOUT_MS });
    return client;
  }

  private discover(issuerUrl: string): Promise<Issuer<BaseClient>> {
    const cached = this.issuers.get(issuerUrl);
    if (cached) return cached;
    const pending = Issuer.discover(issuerUrl).catch((e: unknown) => {
      // a failure is not remembered: the next member tries again
      this.issuers.delete(issuerUrl);
      throw new ProviderUnavailableError(`discovery of ${issuerUrl} failed: ${(e as Error).message}`);
    });
    this.issuers.set(issuerUrl, pending);
    return pending;
  }
}
