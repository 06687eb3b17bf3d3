import { Inject, Injectable, Logger } from '@nestjs/common';
import { decode, verify } from 'jsonwebtoken';
import { SETTINGS } from '../../../config/config.module';
import type { Settings } from '../../../config/settings';
import type { ClientRecord } from '../clients/client.schema';
import { ClientsService } from '../clients/clients.service';
import { OAuthError } from '../oauth/oauth-error';
import type { ClientAuthParams, TokenRequestBody } from '../oauth/token-request.dto';
import { CLIENT_ASSERTION_ALGORITHMS } from '../oauth/smart-configuration';
import { RateLimitService } from '../rate-limit/rate-limit.service';
import { requireClientTokenProgram, type Realm, type TokenSet } from '../tokens/grant.service';
import { parseScope } from '../tokens/scopes';
import { TokenService } from '../tokens/token.service';
import { BackendServicesRepository } from './backend-services.repository';
import type { ClientJwksDoc } from './backend-services.schemas';
import { JwksError, parseJwks, type ClientPublicKey } from './client-keys';
import { KeySetFetcher, KeySetFetchError } from './key-set-fetcher';

export const JWT_BEARER_ASSERTION = 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer';
/** Scopes of a backend-services token: client-level reads (and bulk export on the gateway). */
const BACKEND_SCOPES = ['system/*.rs', 'system/*.read', 'bulk-data'] as const;
/** backend-services.html: `exp` no more than five minutes in the future. */
const MAX_ASSERTION_LIFETIME_S = 300;
const CLOCK_SKEW_S = 30;

/** Every refusal of an assertion is the same 401 `invalid_client` (RFC 7523 §3.2), with a reason. */
const refuse = (reason: string) => new OAuthError('invalid_client', reason, 401);

/** What an assertion claims, checked before any key is looked at. */
interface Claims {
  clientId: string;
  alg: string;
  kid?: string;
  jti: string;
  exp: number;
}

/**
 * SMART Backend Services (https://hl7.org/fhir/smart-app-launch/backend-services.html):
 * `client_credentials` authenticated by a JWT the client signs with a key it registered
 * (RFC 7523 client assertion). The token is client-level and read-only (`system/*.rs`).
 *
 * Everything that needs no key is checked first (header, claims, throttle, client, jti), so a
 * forged assertion naming a client makes no request to the client's key-set URL unless it would
 * pass with a valid signature; the URL is fetched within fixed limits (KeySetFetcher). A caller
 * is never told the URL or what it answered: those go to the log.
 */
@Injectable()
export class BackendServicesService {
  private readonly logger = new Logger('BackendServices');
  private readonly keySets = new KeySetFetcher();

  constructor(
    @Inject(SETTINGS) private readonly settings: Settings,
    private readonly clients: ClientsService,
    private readonly tokens: TokenService,
    private readonly rateLimit: RateLimitService,
    private readonly repository: BackendServicesRepository,
  ) {}

  /**
   * `client set-jwks <id> <file|url>`: the JWK Set text (checked) or an http(s) URL of one. A URL
   * with credentials is refused: they would be stored and sent in clear on every fetch.
   */
  async setKeys(clientId: string, source: { jwks: string } | { jwksUrl: string }): Promise<void> {
    if (!(await this.clients.findActive(clientId)))
      throw new JwksError(`client ${clientId} is unknown or disabled`);
    if ('jwks' in source) parseJwks(source.jwks);
    else checkKeySetUrl(source.jwksUrl);
    await this.repository.setKeys(clientId, source);
  }

  /**
   * The token of a verified assertion. `audience`: the URL of the token endpoint that was called;
   * `realm`: the program realm of that endpoint, if any (its program gate applies as to secrets).
   */
  async token(body: TokenRequestBody, audience: string, address: string, realm?: Realm): Promise<TokenSet> {
    const client = await this.authenticateAssertion(body, audience, address);
    requireClientTokenProgram(client, realm);
    const { scopes, unknown } = parseScope(body.scope, BACKEND_SCOPES);
    if (unknown.length > 0) {
      throw new OAuthError(
        'invalid_scope',
        `scope(s) not granted to backend services: ${unknown.join(', ')} (use ${BACKEND_SCOPES.join(', ')})`,
      );
    }
    const granted = scopes.length > 0 ? scopes : ['system/*.rs'];
    return {
      access_token: this.tokens.signClientAccessToken(client.clientId, granted, {
        customer: client.customer,
        realm: 'backend-services',
      }),
      token_type: 'Bearer',
      expires_in: this.settings.accessTokenTtlSeconds,
      scope: granted.join(' '),
    };
  }

  /**
   * The client a signed JWT assertion (RFC 7523, private_key_jwt) authenticates at `audience`, its
   * failures throttled like wrong secrets. Also SMART apps' way at the token endpoint.
   */
  async authenticateAssertion(
    body: ClientAuthParams,
    audience: string,
    address: string,
  ): Promise<ClientRecord> {
    if (body.client_assertion_type !== JWT_BEARER_ASSERTION) {
      throw new OAuthError('invalid_request', `client_assertion_type must be ${JWT_BEARER_ASSERTION}`);
    }
    const assertion = body.client_assertion;
    if (!assertion) throw new OAuthError('invalid_request', 'client_assertion is required');
    const claims = checkWithoutKey(assertion, audience, body.client_id);
    const attempt = await this.rateLimit.reserveAuthAttempt(claims.clientId.slice(0, 200), address);
    try {
      const client = await this.clients.findActive(claims.clientId);
      if (!client) throw refuse('unknown or disabled client');
      const record = await this.repository.findKeys(claims.clientId);
      if (!record || !(record.jwks || record.jwksUrl))
        throw refuse('this client has registered no public keys (client set-jwks)');
      if (await this.repository.jtiUsed(claims.clientId, claims.jti))
        throw refuse('this assertion (jti) was used before');
      const keys = await this.publicKeys(claims.clientId, record);
      this.verifySignature(assertion, claims, keys, audience);
      const expiresAt = new Date((claims.exp + CLOCK_SKEW_S) * 1000);
      if (!(await this.repository.useJti(claims.clientId, claims.jti, expiresAt)))
        throw refuse('this assertion (jti) was used before');
      await attempt.release();
      return client;
    } catch (error) {
      if (error instanceof OAuthError) attempt.failed();
      else await attempt.release();
      throw error;
    }
  }

  /** The signature, with a registered key of the algorithm's family (and the kid, if both name one). */
  private verifySignature(
    assertion: string,
    claims: Claims,
    keys: ClientPublicKey[],
    audience: string,
  ): void {
    const kty = claims.alg.startsWith('RS') ? 'RSA' : 'EC';
    const usable = keys.filter(
      (k) => k.kty === kty && (claims.kid === undefined || k.kid === undefined || k.kid === claims.kid),
    );
    if (usable.length === 0)
      throw refuse(`no registered ${kty} key${claims.kid ? ` with kid ${claims.kid}` : ''} for this client`);
    for (const { key } of usable) {
      try {
        verify(assertion, key, {
          algorithms: [claims.alg as 'RS384' | 'ES384'],
          audience,
          issuer: claims.clientId,
          subject: claims.clientId,
          clockTolerance: CLOCK_SKEW_S,
        });
        return;
      } catch {
        continue; // signature of another key: try the next one
      }
    }
    throw refuse('the assertion is not signed by a registered key of this client');
  }

  private async publicKeys(clientId: string, record: ClientJwksDoc): Promise<ClientPublicKey[]> {
    try {
      if (record.jwks) return parseJwks(record.jwks);
      return await this.keySets.keys(record.jwksUrl!);
    } catch (error) {
      if (!(error instanceof JwksError || error instanceof KeySetFetchError)) throw error;
      this.logger.warn(`client ${clientId}: its JWK Set is unusable: ${error.message}`);
      throw refuse("the client's registered key set could not be used");
    }
  }
}

/**
 * The checks of an assertion that need no key (RFC 7523 §3, backend-services.html#authenticating-to-the-token-endpoint):
 * a JWS with no `crit` header (RFC 7515 §4.1.11: no extension is understood here), an accepted
 * `alg`, `iss` = `sub` (= `client_id` when sent), `aud` this endpoint, `exp` not past and at most
 * five minutes ahead, a `jti`. The signature is checked later with the client's keys.
 */
export function checkWithoutKey(assertion: string, audience: string, namedClientId?: string): Claims {
  const decoded = decode(assertion, { complete: true });
  if (!decoded || typeof decoded.payload !== 'object' || decoded.payload === null)
    throw refuse('client_assertion is not a JWT');
  const header = decoded.header as unknown as Record<string, unknown>;
  const payload = decoded.payload;
  if ('crit' in header) throw refuse('the assertion has a crit header: no JWS extension is understood here');
  const alg = header.alg;
  if (typeof alg !== 'string' || !(CLIENT_ASSERTION_ALGORITHMS as readonly string[]).includes(alg)) {
    throw refuse(`alg ${String(alg)} is not accepted: sign with ${CLIENT_ASSERTION_ALGORITHMS.join(' or ')}`);
  }
  const clientId = payload.iss;
  if (typeof clientId !== 'string' || clientId === '' || payload.sub !== clientId)
    throw refuse('iss and sub must both be the client_id');
  if (namedClientId !== undefined && namedClientId !== clientId)
    throw refuse('client_id differs from the assertion issuer');
  const aud = Array.isArray(payload.aud) ? payload.aud : [payload.aud];
  if (!aud.includes(audience)) throw refuse(`aud must be ${audience}`);
  const now = Math.floor(Date.now() / 1000);
  if (typeof payload.exp !== 'number') throw refuse('exp is required');
  if (payload.exp + CLOCK_SKEW_S <= now) throw refuse('the assertion has expired');
  if (payload.exp > now + MAX_ASSERTION_LIFETIME_S + CLOCK_SKEW_S)
    throw refuse('exp may be at most five minutes in the future');
  const jti = payload.jti;
  if (typeof jti !== 'string' || jti.length === 0 || jti.length > 256) throw refuse('jti is required');
  const kid = typeof header.kid === 'string' ? header.kid : undefined;
  return { clientId, alg, kid, jti, exp: payload.exp };
}

/** An http(s) URL without credentials (they would be stored and sent on every fetch). */
export function checkKeySetUrl(url: string): void {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new JwksError('the JWKS URL is not a URL');
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:')
    throw new JwksError('the JWKS URL must be http(s)');
  if (parsed.username || parsed.password)
    throw new JwksError('the JWKS URL must not carry credentials (user:password@)');
}
