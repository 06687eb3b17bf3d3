import { createHash, randomBytes, scrypt, timingSafeEqual } from 'crypto';

/**
 * Client secrets are stored as scrypt hashes (`scrypt$N$r$p$salt$hash`, base64url parts) and
 * compared in constant time. The parameters travel with the hash so they can be raised later
 * without invalidating existing secrets.
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

export async function hashSecret(secret: string): Promise<string> {
  const salt = randomBytes(16);
  const key = await scryptAsync(secret, salt, N, R, P);
  return ['scrypt', N, R, P, salt.toString('base64url'), key.toString('base64url')].join('$');
}

/** A hash of a random secret, checked when the client is unknown so both paths cost the same. */
let decoyHash: Promise<string> | undefined;

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

export function verifySecret(secret: string, stored: string | undefined): Promise<boolean> {
  return oneAtATime(() => verifyNow(secret, stored));
}

async function verifyNow(secret: string, stored: string | undefined): Promise<boolean> {
  const encoded = stored ?? (await (decoyHash ??= hashSecret(randomBytes(32).toString('base64url'))));
  const parts = encoded.split('$');
  if (parts.length !== 6 || parts[0] !== 'scrypt') return false;
  const [n, r, p] = parts.slice(1, 4).map(Number);
  const salt = Buffer.from(parts[4], 'base64url');
  const expected = Buffer.from(parts[5], 'base64url');
  const actual = await scryptAsync(secret, salt, n, r, p);
  return timingSafeEqual(actual, expected) && stored !== undefined;
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
