import { Inject, Injectable } from '@nestjs/common';
import { decode, verify, type JwtPayload } from 'jsonwebtoken';
import { SETTINGS } from '../../../config/config.module';
import type { Settings } from '../../../config/settings';
import type { ClientRecord } from '../clients/client.schema';
import { ClientsService } from '../clients/clients.service';
import { OAuthError } from '../oauth/oauth-error';
import { CLIENT_ASSERTION_ALGORITHMS } from '../oauth/smart-configuration';
import { RateLimitService } from '../rate-limit/rate-limit.service';
import type { TokenSet } from '../tokens/grant.service';
import { parseScope } from '../tokens/scopes';
import { TokenService } from '../tokens/token.service';
import { BackendServicesRepository } from './backend-services.repository';
import { JwksError, parseJwks, type ClientPublicKey } from './client-keys';

export const JWT_BEARER_ASSERTION = 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer';
/** Scopes of a backend-services token: client-level reads (and bulk export on the gateway). */
const BACKEND_SCOPES = ['system/*.rs', 'system/*.read', 'bulk-data'] as const;
/** backend-services.html: `exp` no more than five minutes in the future. */
const MAX_ASSERTION_LIFETIME_S = 300;
const CLOCK_SKEW_S = 30;
const JWKS_URL_TIMEOUT_MS = 5_000;
const JWKS_URL_CACHE_MS = 5 * 60_000;
const JWKS_MAX_BYTES = 64 * 1024;

function param(body: Record<string, unknown>, name: string): string | undefined {
  const v = body[name];
  return typeof v === 'string' && v !== '' ? v : undefined;
}

/** Every refusal of an assertion is the same 401 `invalid_client` (RFC 7523 §3.2), with a reason. */
const refuse = (reason: string) => new OAuthError('invalid_client', reason, 401);

/**
 * SMART Backend Services (https://hl7.org/fhir/smart-app-launch/backend-services.html):
 * `client_credentials` authenticated by a JWT the client signs with a key it registered
 * (RFC 7523 client assertion). The token is client-level and read-only (`system/*.rs`).
 */
@Injectable()
export class BackendServicesService {
  private readonly urlCache = new Map<string, { keys: ClientPublicKey[]; until: number }>();

  constructor(
    @Inject(SETTINGS) private readonly settings: Settings,
    private readonly clients: ClientsService,
    private readonly tokens: TokenService,
    private readonly rateLimit: RateLimitService,
    private readonly repository: BackendServicesRepository,
  ) {}

  /** `client set-jwks <id> <file|url>`: the JWK Set text (checked) or an http(s) URL of one. */
  async setKeys(clientId: string, source: { jwks: string } | { jwksUrl: string }): Promise<void> {
    if (!(await this.clients.findActive(clientId)))
      throw new JwksError(`client ${clientId} is unknown or disabled`);
    if ('jwks' in source) parseJwks(source.jwks);
    else if (!/^https?:\/\//.test(source.jwksUrl)) throw new JwksError('the JWKS URL must be http(s)');
    await this.repository.setKeys(clientId, source);
  }

  /** The token of a verified assertion. `audience`: the URL of the token endpoint that was called. */
  async token(body: Record<string, unknown>, audience: string, address: string): Promise<TokenSet> {
    const client = await this.authenticate(body, audience, address);
    const { scopes, unknown } = parseScope(param(body, 'scope'), BACKEND_SCOPES);
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

  private async authenticate(
    body: Record<string, unknown>,
    audience: string,
    address: string,
  ): Promise<ClientRecord> {
    if (param(body, 'client_assertion_type') !== JWT_BEARER_ASSERTION) {
      throw new OAuthError('invalid_request', `client_assertion_type must be ${JWT_BEARER_ASSERTION}`);
    }
    const assertion = param(body, 'client_assertion');
    if (!assertion) throw new OAuthError('invalid_request', 'client_assertion is required');
    const decoded = decode(assertion, { complete: true });
    if (!decoded || typeof decoded.payload !== 'object') throw refuse('client_assertion is not a JWT');
    const { header, payload } = decoded;
    const clientId = payload.iss;
    if (typeof clientId !== 'string' || payload.sub !== clientId)
      throw refuse('iss and sub must both be the client_id');
    const named = param(body, 'client_id');
    if (named !== undefined && named !== clientId)
      throw refuse('client_id differs from the assertion issuer');
    await this.rateLimit.checkAuthFailures(clientId.slice(0, 200), address);
    try {
      const client = await this.clients.findActive(clientId);
      if (!client) throw refuse('unknown or disabled client');
      const verified = await this.verify(assertion, header.alg, header.kid, clientId, audience);
      const jti = verified.jti;
      if (typeof jti !== 'string' || jti.length === 0 || jti.length > 256) throw refuse('jti is required');
      const expiresAt = new Date((verified.exp! + CLOCK_SKEW_S) * 1000);
      if (!(await this.repository.useJti(clientId, jti, expiresAt)))
        throw refuse('this assertion (jti) was used before');
      return client;
    } catch (error) {
      if (error instanceof OAuthError)
        await this.rateLimit.recordAuthFailure(clientId.slice(0, 200), address);
      throw error;
    }
  }

  /** The verified claims, with a registered key of the algorithm's family; `exp` ≤ 5 min ahead. */
  private async verify(
    assertion: string,
    alg: string,
    kid: string | undefined,
    clientId: string,
    audience: string,
  ): Promise<JwtPayload> {
    if (!(CLIENT_ASSERTION_ALGORITHMS as readonly string[]).includes(alg)) {
      throw refuse(`alg ${alg} is not accepted: sign with ${CLIENT_ASSERTION_ALGORITHMS.join(' or ')}`);
    }
    const kty = alg.startsWith('RS') ? 'RSA' : 'EC';
    const keys = (await this.publicKeys(clientId)).filter(
      (k) => k.kty === kty && (kid === undefined || k.kid === undefined || k.kid === kid),
    );
    if (keys.length === 0)
      throw refuse(`no registered ${kty} key${kid ? ` with kid ${kid}` : ''} for this client`);
    for (const { key } of keys) {
      let claims: JwtPayload;
      try {
        claims = verify(assertion, key, {
          algorithms: [alg as 'RS384' | 'ES384'],
          audience,
          issuer: clientId,
          subject: clientId,
          clockTolerance: CLOCK_SKEW_S,
        }) as JwtPayload;
      } catch (error) {
        const name = (error as Error).name;
        if (name === 'TokenExpiredError') throw refuse('the assertion has expired');
        if ((error as Error).message.includes('audience')) throw refuse(`aud must be ${audience}`);
        continue; // signature of another key: try the next one
      }
      const now = Math.floor(Date.now() / 1000);
      if (typeof claims.exp !== 'number') throw refuse('exp is required');
      if (claims.exp > now + MAX_ASSERTION_LIFETIME_S + CLOCK_SKEW_S) {
        throw refuse('exp may be at most five minutes in the future');
      }
      return claims;
    }
    throw refuse('the assertion is not signed by a registered key of this client');
  }

  private async publicKeys(clientId: string): Promise<ClientPublicKey[]> {
    const record = await this.repository.findKeys(clientId);
    if (!record) throw refuse('this client has registered no public keys (client set-jwks)');
    try {
      if (record.jwks) return parseJwks(record.jwks);
      if (record.jwksUrl) return await this.keysFromUrl(record.jwksUrl);
    } catch (error) {
      if (error instanceof JwksError) throw refuse(`the client's JWK Set is unusable: ${error.message}`);
      throw error;
    }
    throw refuse('this client has registered no public keys (client set-jwks)');
  }

  /** A JWKS URL, fetched with a timeout and cached for a few minutes. */
  private async keysFromUrl(url: string): Promise<ClientPublicKey[]> {
    const cached = this.urlCache.get(url);
    if (cached && cached.until > Date.now()) return cached.keys;
    let text: string;
    try {
      const res = await fetch(url, { signal: AbortSignal.timeout(JWKS_URL_TIMEOUT_MS), redirect: 'error' });
      if (!res.ok) throw new JwksError(`${url} answered ${res.status}`);
      text = await res.text();
    } catch (error) {
      if (error instanceof JwksError) throw error;
      throw new JwksError(`${url} could not be fetched`);
    }
    if (text.length > JWKS_MAX_BYTES) throw new JwksError(`${url} is larger than ${JWKS_MAX_BYTES} bytes`);
    const keys = parseJwks(text);
    this.urlCache.set(url, { keys, until: Date.now() + JWKS_URL_CACHE_MS });
    return keys;
  }
}
