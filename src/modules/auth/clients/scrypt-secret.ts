import { randomBytes, scrypt, timingSafeEqual } from 'crypto';

/**
 * scrypt hashes (`scrypt$N$r$p$salt$hash`, base64url parts), for secrets a person may have chosen
 * (a member's sign-in secret set by the plan) and for client secrets stored before server-made
 * secrets got a SHA-256 digest (secret-hash.ts). The parameters travel with the hash so they can be
 * raised later without invalidating existing secrets.
 */
const N = 16384;
const R = 8;
const P = 1;
const KEY_LENGTH = 32;

function scryptAsync(secret: string, salt: Buffer, n: number, r: number, p: number): Promise<Buffer> {
  return new Promise((resolve, reject) =>
    scrypt(secret, salt, KEY_LENGTH, { N: n, r, p, maxmem: 64 * 1024 * 1024 }, (err, key) =>
      err ? reject(err) : resolve(key),
    ),
  );
}

export async function scryptHash(secret: string): Promise<string> {
  const salt = randomBytes(16);
  const key = await scryptAsync(secret, salt, N, R, P);
  return ['scrypt', N, R, P, salt.toString('base64url'), key.toString('base64url')].join('$');
}

export function isScryptHash(stored: string): boolean {
  return stored.startsWith('scrypt$');
}

/**
 * Verifications run one at a time (docs/security.md "Throttling failed client authentication"):
 * scrypt runs on libuv's thread pool (4 threads), so a burst of wrong secrets verified together
 * would take every core from the other tenants' requests; one after the other they take at most
 * one. Owners rarely wait here: a secret verified as right is remembered (ClientsService).
 */
let verifying: Promise<unknown> = Promise.resolve();
function oneAtATime<T>(work: () => Promise<T>): Promise<T> {
  const run = verifying.then(work, work);
  verifying = run.catch(() => undefined);
  return run;
}

/**
 * Whether `secret` is the one `stored` (an scrypt hash) was made from: one scrypt run (≈ 50–80 ms
 * of a pool thread), queued behind any other. A malformed hash never matches (and runs nothing).
 */
export function scryptMatches(secret: string, stored: string): Promise<boolean> {
  const parts = stored.split('$');
  if (parts.length !== 6 || parts[0] !== 'scrypt') return Promise.resolve(false);
  const [n, r, p] = parts.slice(1, 4).map(Number);
  const salt = Buffer.from(parts[4], 'base64url');
  const expected = Buffer.from(parts[5], 'base64url');
  if (expected.length !== KEY_LENGTH) return Promise.resolve(false);
  // parameters scrypt refuses (a corrupted hash) reject: that hash never matches either
  return oneAtATime(() =>
    scryptAsync(secret, salt, n, r, p).then(
      (key) => timingSafeEqual(key, expected),
      () => false,
    ),
  );
}
