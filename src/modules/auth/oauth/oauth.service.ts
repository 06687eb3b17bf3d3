import { Inject, Injectable } from '@nestjs/common';
import { SETTINGS } from '../../../config/config.module';
import { Settings } from '../../../config/settings';
import { PresentedClientCredentials } from '../clients/client-credentials';
import { ClientAuthenticator } from '../rate-limit/client-authenticator';
import { GrantService, Realm, TokenSet } from '../tokens/grant.service';
import { USER_TOKEN_SCOPES } from '../tokens/scopes';
import { TokenService } from '../tokens/token.service';
import { OAuthError } from './oauth-error';
import {
  requiredParam,
  type ClientAuthParams,
  type TokenManagementBody,
  type TokenRequestBody,
} from './token-request.dto';
import { smartConfiguration, tokenEndpoint } from './smart-configuration';
import { BackendServicesService } from '../backend-services/backend-services.service';
import { ClientRecord } from '../clients/client.schema';
import { ClientsService } from '../clients/clients.service';
import { LaunchTokensService } from '../member-launch/launch-tokens.service';

const GRANT_TYPES = ['authorization_code', 'refresh_token', 'client_credentials'] as const;
type GrantType = (typeof GRANT_TYPES)[number];

/** The token endpoints (docs/api.md §4) and the discovery documents. */
@Injectable()
export class OAuthService {
  constructor(
    @Inject(SETTINGS) private readonly settings: Settings,
    private readonly grants: GrantService,
    private readonly tokens: TokenService,
    private readonly clientAuth: ClientAuthenticator,
    private readonly backendServices: BackendServicesService,
    private readonly clients: ClientsService,
    private readonly launchTokens: LaunchTokensService,
  ) {}

  /**
   * RFC 6749 §3.2 token request. `realm` set = a program realm endpoint (client_credentials
   * allowed there); unset = `/oauth2/token` (user grants only).
   */
  async token(
    body: TokenRequestBody,
    creds: PresentedClientCredentials | null,
    realm?: Realm,
    /** The request's source address (failed assertions are throttled per client and address). */
    address = 'unknown',
  ): Promise<TokenSet> {
    const grantType = body.grant_type;
    if (grantType === 'client_credentials' && body.client_assertion_type !== undefined) {
      // SMART Backend Services: the client authenticates with a signed JWT, at any token endpoint
      const audience = realm
        ? `${this.settings.urls.auth}/auth/realms/${realm}/protocol/openid-connect/token`
        : tokenEndpoint(this.settings);
      return this.backendServices.token(body, audience, address, realm);
    }
    if (
      !(GRANT_TYPES as readonly string[]).includes(grantType) ||
      (grantType === 'client_credentials' && !realm)
    ) {
      throw new OAuthError('unsupported_grant_type', `grant_type "${grantType}" is not supported here`);
    }
    const client = await this.authenticate(body, creds, realm, address);
    if (client.app) {
      // a SMART app's codes and refresh tokens come from its member grants (SMART App Launch)
      if (grantType === 'authorization_code') return this.launchTokens.exchangeCode(client, body);
      if (grantType === 'refresh_token') return this.launchTokens.refresh(client, body);
      throw new OAuthError('unauthorized_client', "a SMART app gets tokens from its members' grants only");
    }
    switch (grantType as GrantType) {
      case 'authorization_code':
        return this.grants.exchangeCode(client, requiredParam(body.code, 'code'));
      case 'refresh_token':
        return this.grants.refresh(client, requiredParam(body.refresh_token, 'refresh_token'));
      case 'client_credentials':
        return this.grants.clientCredentials(client, realm!, body.scope);
    }
  }

  /**
   * The client of a user-grant token request: a secret (HTTP Basic or body), a signed JWT assertion
   * (private_key_jwt, SMART apps at /oauth2/token), or for a public SMART app its client_id alone
   * (its codes are bound to a PKCE challenge instead).
   */
  private async authenticate(
    body: ClientAuthParams,
    creds: PresentedClientCredentials | null,
    realm: Realm | undefined,
    address: string,
  ): Promise<ClientRecord> {
    if (!realm && body.client_assertion_type !== undefined) {
      const client = await this.backendServices.authenticateAssertion(
        body,
        tokenEndpoint(this.settings),
        address,
      );
      if (!client.app)
        throw new OAuthError(
          'unauthorized_client',
          'a signed assertion authenticates SMART apps and backend services only',
        );
      return client;
    }
    if (creds) {
      const client = await this.clientAuth.authenticate(creds.clientId, creds.secret, creds.address);
      if (!client) throw OAuthError.invalidClient(creds.basic);
      return client;
    }
    const clientId = body.client_id;
    const publicApp = !realm && clientId ? await this.clients.findActive(clientId) : null;
    if (publicApp?.app?.public) return publicApp;
    throw new OAuthError(
      'invalid_client',
      'client_id and client_secret are required (body or HTTP Basic)',
      401,
      {
        'WWW-Authenticate': 'Basic realm="token"',
      },
    );
  }

  /** RFC 7662 token introspection, for the plan's and the app's backends (client authentication required). */
  async introspect(
    body: TokenManagementBody,
    creds: PresentedClientCredentials | null,
    address: string,
  ): Promise<Record<string, unknown>> {
    const client = await this.authenticate(body, creds, undefined, address);
    if (client.app?.public && !creds)
      throw new OAuthError('invalid_client', 'introspection is for confidential clients', 401);
    return this.launchTokens.introspect(client, body.token);
  }

  /** RFC 7009 revocation: the token's grant stops (tokens and refresh tokens); unknown tokens are no error. */
  async revoke(
    body: TokenManagementBody,
    creds: PresentedClientCredentials | null,
    address: string,
  ): Promise<Record<string, never>> {
    const client = await this.authenticate(body, creds, undefined, address);
    await this.launchTokens.revokeToken(client, body.token);
    return {};
  }

  openidConfiguration(): Record<string, unknown> {
    const auth = this.settings.urls.auth;
    return {
      issuer: this.settings.jwt.issuer,
      token_endpoint: `${auth}/oauth2/token`,
      jwks_uri: `${auth}/.well-known/jwks.json`,
      response_types_supported: ['code'],
      grant_types_supported: ['authorization_code', 'refresh_token'],
      subject_types_supported: ['public'],
      id_token_signing_alg_values_supported: ['RS256'],
      token_endpoint_auth_methods_supported: ['client_secret_post', 'client_secret_basic'],
      scopes_supported: [...USER_TOKEN_SCOPES],
      claims_supported: ['sub', 'iss', 'aud', 'exp', 'iat', 'auth_time', 'preferred_username'],
    };
  }

  /** SMART App Launch discovery (smart-configuration.ts). */
  smartConfiguration(): Record<string, unknown> {
    return smartConfiguration(this.settings);
  }

  jwks(): { keys: Record<string, string>[] } {
    return this.tokens.jwks();
  }
}
