/**
 * Scopes this service understands. A user token's default is `user/*.*` (docs/api.md §2);
 * `user/*.rs` / `*.read` restrict a token to read and search (docs/api.md §4); `openid` adds an
 * id_token; `bulk-data` allows bulk export with a client-level token.
 */
export const USER_TOKEN_SCOPES = [
  'openid',
  'offline_access',
  'user/*.*',
  'user/*.rs',
  'user/*.read',
] as const;
export const CLIENT_TOKEN_SCOPES = [
  'bulk-data',
  'user/*.*',
  'user/*.rs',
  'user/*.read',
  'system/*.*',
  'system/*.rs',
  'system/*.read',
] as const;

const RESOURCE_SCOPE = /^(user|system)\/\*\./;

/**
 * Splits a scope parameter (space-separated per RFC 6749 §3.3; the program realms' examples join
 * alternatives with `|`). Returns the unknown ones separately so callers can answer invalid_scope.
 */
export function parseScope(
  raw: string | undefined,
  known: readonly string[],
): { scopes: string[]; unknown: string[] } {
  const parts = (raw ?? '')
    .split(/[\s|]+/)
    .map((s) => s.trim())
    .filter(Boolean);
  const unique = [...new Set(parts)];
  return {
    scopes: unique.filter((s) => known.includes(s)),
    unknown: unique.filter((s) => !known.includes(s)),
  };
}

/** Adds the default resource scope when none was asked for. */
export function withDefaultResourceScope(scopes: string[], fallback: readonly string[]): string[] {
  return scopes.some((s) => RESOURCE_SCOPE.test(s) || s === 'bulk-data') ? scopes : [...scopes, ...fallback];
}
