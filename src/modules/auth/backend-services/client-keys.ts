import { createPublicKey, type KeyObject } from 'node:crypto';

/** One usable public key of a client's JWK Set. */
export interface ClientPublicKey {
  kid?: string;
  kty: 'RSA' | 'EC';
  key: KeyObject;
}

/** Why a JWK Set is refused at registration (`client set-jwks`). */
export class JwksError extends Error {}

/**
 * Reads a JWK Set (RFC 7517 §5): RSA and EC signing keys, public parts only. A private key (`d`)
 * is refused: the client keeps it, the server must never hold it.
 */
export function parseJwks(text: string): ClientPublicKey[] {
  let set: unknown;
  try {
    set = JSON.parse(text);
  } catch {
    throw new JwksError('the JWK Set is not JSON');
  }
  const keys = (set as { keys?: unknown })?.keys;
  if (!Array.isArray(keys) || keys.length === 0)
    throw new JwksError('a JWK Set needs a non-empty "keys" array');
  return keys.map((jwk: Record<string, unknown>, i) => {
    if (jwk.kty !== 'RSA' && jwk.kty !== 'EC') throw new JwksError(`key ${i}: kty must be RSA or EC`);
    if ('d' in jwk || 'p' in jwk || 'q' in jwk)
      throw new JwksError(`key ${i} is a private key: register public keys only`);
    if (jwk.use !== undefined && jwk.use !== 'sig') throw new JwksError(`key ${i}: use must be sig`);
    let key: KeyObject;
    try {
      key = createPublicKey({ key: jwk as never, format: 'jwk' });
    } catch {
      throw new JwksError(`key ${i} is not a valid ${String(jwk.kty)} JWK`);
    }
    return { kid: typeof jwk.kid === 'string' ? jwk.kid : undefined, kty: jwk.kty, key };
  });
}
