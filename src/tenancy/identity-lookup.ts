/**
 * What the tenant guard needs to know about clients, tokens and users, and no more. The identity
 * side (the auth and users modules) provides it (src/modules/auth/identity-lookup.provider.ts);
 * tenancy imports neither module, so feature modules can use `@UseTenant()` without a cycle.
 */
export interface TenantClient {
  clientId: string;
  customer?: string;
}

export interface AccessTokenClaims {
  clientId: string;
  /** service_user_id, or null for a client-level (program realm) token. */
  userId: number | null;
  scopes: readonly string[];
  /** Refresh-token family the token was issued from, if any. */
  family?: string;
  /** A SMART App Launch token: the app, the member's Patient, the grant it was issued from. */
  launch?: { readonly app: string; readonly patient?: string; readonly grant: string };
}

export interface IdentityLookup extends CachedIdentity {
  /** The claims of a valid, unexpired access token; null otherwise. */
  verifyAccessToken(token: string): AccessTokenClaims | null;
  findActiveClient(clientId: string): Promise<TenantClient | null>;
  /** Client credentials checked (with the failed-attempt limits of the source address). */
  authenticateClient(clientId: string, secret: string, sourceAddress: string): Promise<TenantClient | null>;
  isFamilyRevoked(clientId: string, family: string): Promise<boolean>;
  /** Whether the member's grant still stands and its app is enabled (revoking stops its tokens at once). */
  isLaunchGrantActive(launch: { readonly app: string; readonly grant: string }): Promise<boolean>;
  /** The service_user_id of a user of the client, by its id or its app_user_id; null if none. */
  findUserId(clientId: string, serviceUserId: number): Promise<number | null>;
  findUserIdByAppUserId(clientId: string, appUserId: string): Promise<number | null>;
}

/**
 * What the caches of the identity side already hold, answered at once: `undefined` when the
 * answer needs a lookup (the database, or a token this process has not verified yet). Each
 * answers what its `IdentityLookup` counterpart would, so the tenant resolver can resolve a
 * token seen recently without a promise; anything else goes through passport as before.
 */
export interface CachedIdentity {
  cachedAccessToken(token: string): AccessTokenClaims | null | undefined;
  cachedActiveClient(clientId: string): TenantClient | null | undefined;
  cachedFamilyRevoked(clientId: string, family: string): boolean | undefined;
  cachedLaunchGrantActive(launch: { readonly app: string; readonly grant: string }): boolean | undefined;
}

export const IDENTITY_LOOKUP = Symbol('IdentityLookup');
