import type { Settings } from '../../../config/settings';
import { CLIENT_TOKEN_SCOPES, USER_TOKEN_SCOPES } from '../tokens/scopes';

/** Algorithms a SMART Backend Services client assertion may be signed with (RS384/ES384 per the spec). */
export const CLIENT_ASSERTION_ALGORITHMS = ['RS384', 'ES384'] as const;

/** The token endpoint every SMART client is pointed at (discovery and CapabilityStatement). */
export function tokenEndpoint(settings: Settings): string {
  return `${settings.urls.auth}/oauth2/token`;
}

/** Where a SMART app sends the member's browser (SMART App Launch 2.2 standalone launch). */
export function authorizationEndpoint(settings: Settings): string {
  return `${settings.urls.auth}/oauth2/authorize`;
}

/** Scopes a member can grant an app (examples; the grammar is SMART v1 and v2, see launch-scopes.ts). */
const LAUNCH_SCOPES = [
  'launch/patient',
  'openid',
  'fhirUser',
  'offline_access',
  'online_access',
  'patient/*.rs',
  'patient/*.read',
  'user/*.rs',
];

/**
 * SMART App Launch 2.2 §2.1 discovery (`/.well-known/smart-configuration`, also under each FHIR
 * base): members authorize apps at `authorization_endpoint` (standalone launch, PKCE S256); codes
 * for a plan's own backend still come from the backend auth-code endpoint; client-level tokens from
 * `client_credentials` with a secret or a signed JWT assertion (SMART Backend Services).
 */
export function smartConfiguration(settings: Settings): Record<string, unknown> {
  const auth = settings.urls.auth;
  return {
    issuer: settings.jwt.issuer,
    jwks_uri: `${auth}/.well-known/jwks.json`,
    authorization_endpoint: authorizationEndpoint(settings),
    token_endpoint: tokenEndpoint(settings),
    introspection_endpoint: `${auth}/oauth2/introspect`,
    revocation_endpoint: `${auth}/oauth2/revoke`,
    management_endpoint: `${auth}/oauth2/member/apps`,
    grant_types_supported: ['authorization_code', 'refresh_token', 'client_credentials'],
    token_endpoint_auth_methods_supported: [
      'client_secret_post',
      'client_secret_basic',
      'private_key_jwt',
      'none',
    ],
    token_endpoint_auth_signing_alg_values_supported: [...CLIENT_ASSERTION_ALGORITHMS],
    scopes_supported: [...new Set([...LAUNCH_SCOPES, ...USER_TOKEN_SCOPES, ...CLIENT_TOKEN_SCOPES])],
    response_types_supported: ['code'],
    code_challenge_methods_supported: ['S256'],
    capabilities: [
      'launch-standalone',
      'authorize-post',
      'client-public',
      'client-confidential-symmetric',
      'client-confidential-asymmetric',
      'context-standalone-patient',
      'permission-patient',
      'permission-user',
      'permission-v1',
      'permission-v2',
      'permission-offline',
      'permission-online',
      'sso-openid-connect',
    ],
  };
}
