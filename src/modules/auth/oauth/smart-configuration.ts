import type { Settings } from '../../../config/settings';
import { CLIENT_TOKEN_SCOPES, USER_TOKEN_SCOPES } from '../tokens/scopes';

/** Algorithms a SMART Backend Services client assertion may be signed with (RS384/ES384 per the spec). */
export const CLIENT_ASSERTION_ALGORITHMS = ['RS384', 'ES384'] as const;

/** The token endpoint every SMART client is pointed at (discovery and CapabilityStatement). */
export function tokenEndpoint(settings: Settings): string {
  return `${settings.urls.auth}/oauth2/token`;
}

/**
 * SMART App Launch 2.x §2.1 discovery (`/.well-known/smart-configuration`, also under each FHIR
 * base): codes are issued by the backend auth-code endpoint; client-level tokens by
 * `client_credentials` with a secret or with a signed JWT assertion (SMART Backend Services,
 * https://hl7.org/fhir/smart-app-launch/backend-services.html).
 */
export function smartConfiguration(settings: Settings): Record<string, unknown> {
  const auth = settings.urls.auth;
  return {
    issuer: settings.jwt.issuer,
    jwks_uri: `${auth}/.well-known/jwks.json`,
    token_endpoint: tokenEndpoint(settings),
    grant_types_supported: ['authorization_code', 'refresh_token', 'client_credentials'],
    token_endpoint_auth_methods_supported: ['client_secret_post', 'client_secret_basic', 'private_key_jwt'],
    token_endpoint_auth_signing_alg_values_supported: [...CLIENT_ASSERTION_ALGORITHMS],
    scopes_supported: [...new Set([...USER_TOKEN_SCOPES, ...CLIENT_TOKEN_SCOPES])],
    response_types_supported: ['code'],
    capabilities: [
      'client-confidential-symmetric',
      'client-confidential-asymmetric',
      'permission-user',
      'permission-offline',
      'sso-openid-connect',
    ],
  };
}
