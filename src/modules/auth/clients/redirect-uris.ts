/**
 * Which redirect URIs a SMART app may register (RFC 6749 §3.1.2, RFC 8252 for native apps, OAuth
 * 2.0 Security BCP RFC 9700 §2.1): absolute, no fragment, compared later by exact string match.
 * https anywhere; http only on the loopback host (a developer's machine, a native app's loopback
 * listener); a private-use scheme in reverse-domain form (`com.example.app:/callback`) for native
 * apps. Never `javascript:`, `data:`, `file:` or any other scheme a browser would run or read.
 */
const LOOPBACK_HOSTS = new Set(['localhost', '127.0.0.1', '[::1]']);
const PRIVATE_USE_SCHEME = /^[a-z][a-z0-9+-]*(\.[a-z0-9+-]+)+:$/;
const MAX_URIS = 20;
const MAX_URI_LENGTH = 2000;

/** The URIs as given, or an Error naming the first bad one. */
export function checkRedirectUris(raw: readonly string[]): string[] {
  const uris = [...new Set(raw.map((u) => u.trim()).filter(Boolean))];
  if (uris.length === 0) throw new Error('a SMART app needs at least one redirect URI');
  if (uris.length > MAX_URIS) throw new Error(`at most ${MAX_URIS} redirect URIs`);
  for (const uri of uris) {
    const problem = redirectUriProblem(uri);
    if (problem) throw new Error(`redirect URI "${uri}" ${problem}`);
  }
  return uris;
}

function redirectUriProblem(uri: string): string | undefined {
  if (uri.length > MAX_URI_LENGTH) return `is longer than ${MAX_URI_LENGTH} characters`;
  let url: URL;
  try {
    url = new URL(uri);
  } catch {
    return 'is not an absolute URI';
  }
  if (url.hash !== '' || uri.includes('#')) return 'has a fragment';
  if (url.username || url.password) return 'carries credentials';
  if (url.protocol === 'https:') return undefined;
  if (url.protocol === 'http:')
    return LOOPBACK_HOSTS.has(url.hostname) ? undefined : 'uses http on a host that is not loopback';
  if (PRIVATE_USE_SCHEME.test(url.protocol)) return undefined;
  return `uses the scheme "${url.protocol}" (https, http on loopback, or a reverse-domain scheme)`;
}

/** The web origin of a redirect URI (http/https only), for CORS and the pages' form-action. */
export function webOrigin(uri: string): string | undefined {
  try {
    const url = new URL(uri);
    return url.protocol === 'https:' || url.protocol === 'http:' ? url.origin : undefined;
  } catch {
    return undefined;
  }
}
