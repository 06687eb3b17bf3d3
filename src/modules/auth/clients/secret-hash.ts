import { createHash, randomBytes, timingSafeEqual } from 'crypto';
import { isScryptHash, scryptHash, scryptMatches } from './scrypt-secret';

/**
 * How secrets are stored (docs/security.md "Throttling failed client authentication"):
 * - A secret the server made (`newSecret`: 256 random bits; client create, SMART app registration,
 *   rotate-secret) is stored as `sha256$<base64url SHA-256 digest>`. A slow KDF protects secrets
 *   people choose, which a thief of the database can guess from a dictionary; a 256-bit random
 *   value has no dictionary, and finding it from its digest is 2^256 work, so the digest is as
 *   strong and a verification costs microseconds on the event loop instead of 50–80 ms of a pool
 *   thread. No salt: a salt defeats precomputed tables and hides equal secrets, and neither exists
 *   for 256-bit random values. No pepper: it would only help if the digest alone could be inverted,
 *   and it would be one more key to keep and rotate.
 * - A secret a person may choose (a member's sign-in secret) stays scrypt (scrypt-secret.ts), as
 *   do client secrets stored before the digest; a client's is rewritten to the digest after its
 *   first right verification (ClientsService.authenticate).
 * Verification dispatches on the stored format.
 */
const DIGEST = 'sha256$';
const DIGEST_BYTES = 32;

/** The stored form of a secret the server made (`newSecret`). */
export function hashGeneratedSecret(secret: string): string {
  return DIGEST + sha256(secret);
}

/** The stored form of a secret a person may have chosen: scrypt (slow on purpose). */
export function hashChosenSecret(secret: string): Promise<string> {
  return scryptHash(secret);
}

/** A hash to rewrite as a digest once its secret is verified as right (a legacy client hash). */
export function isSlowHash(stored: string): boolean {
  return isScryptHash(stored);
}

/** A digest of a random secret, compared when a client is unknown: the same cost as a wrong secret. */
const digestDecoy = hashGeneratedSecret(newSecret());
/** An scrypt hash of a random secret, for callers whose unknown names must cost what scrypt costs. */
let scryptDecoy: Promise<string> | undefined;

/**
 * Whether `secret` is the one `stored` was made from; false for a malformed stored value. With
 * nothing stored (an unknown client or member) a decoy of the `decoy` format is compared, so the
 * answer takes as long as a wrong secret of that format, and is false.
 */
export async function verifySecret(
  secret: string,
  stored: string | undefined,
  decoy: 'digest' | 'scrypt' = 'digest',
): Promise<boolean> {
  if (stored === undefined) {
    if (decoy === 'digest') digestMatches(secret, digestDecoy);
    else await scryptMatches(secret, await (scryptDecoy ??= scryptHash(newSecret())));
    return false;
  }
  if (stored.startsWith(DIGEST)) return digestMatches(secret, stored);
  return scryptMatches(secret, stored);
}

/** Synchronous and constant-time in the secret: equal-length digests compared by timingSafeEqual. */
function digestMatches(secret: string, stored: string): boolean {
  const expected = Buffer.from(stored.slice(DIGEST.length), 'base64url');
  const actual = createHash('sha256').update(secret).digest();
  return expected.length === DIGEST_BYTES && timingSafeEqual(actual, expected);
}

/** New random credentials: a 24-hex-digit client id and a 256-bit secret. */
export function newClientId(): string {
  return randomBytes(12).toString('hex');
}

export function newSecret(): string {
  return randomBytes(32).toString('base64url');
}

/** SHA-256 of a high-entropy value (a presented secret for the cache key, codes, refresh tokens). */
export function sha256(value: string): string {
  return createHash('sha256').update(value).digest('base64url');
}
