import { createHash, createPrivateKey, createPublicKey, generateKeyPairSync, KeyObject } from 'crypto';
import { existsSync, linkSync, mkdirSync, readFileSync, unlinkSync, writeFileSync } from 'fs';
import { join } from 'path';
import type { Logger } from '@nestjs/common';

/** The RS256 key pair signing every token, with its JWK (RFC 7517) and key id (RFC 7638). */
export interface SigningKey {
  privateKey: KeyObject;
  publicKey: KeyObject;
  kid: string;
  jwk: Record<string, string>;
}

export const DEV_KEY_FILE = 'dev-signing-key.pem';

/**
 * `Settings.jwt.privateKeyPem` when set; otherwise a development key generated once into
 * `${dataDir}/dev-signing-key.pem` (mode 0600) and reused across restarts, with a warning.
 */
export function loadSigningKey(
  privateKeyPem: string | undefined,
  dataDir: string,
  logger: Logger,
): SigningKey {
  let pem = privateKeyPem;
  if (!pem) {
    const file = join(dataDir, DEV_KEY_FILE);
    if (!existsSync(file)) createDevKey(dataDir, file);
    pem = readFileSync(file, 'utf8');
    logger.warn(`JWT_PRIVATE_KEY is not set: signing tokens with the development key ${file}`);
  }
  const privateKey = createPrivateKey(pem);
  if (privateKey.asymmetricKeyType !== 'rsa') throw new Error('JWT_PRIVATE_KEY must be an RSA private key');
  const publicKey = createPublicKey(privateKey);
  const { n, e } = publicKey.export({ format: 'jwk' }) as { n: string; e: string };
  // RFC 7638 thumbprint: SHA-256 of the required members in lexicographic order.
  const kid = createHash('sha256')
    .update(JSON.stringify({ e, kty: 'RSA', n }))
    .digest('base64url');
  return { privateKey, publicKey, kid, jwk: { kty: 'RSA', n, e, kid, alg: 'RS256', use: 'sig' } };
}

/** Writes the key to a temporary file, then links it into place: concurrent starts agree on one. */
function createDevKey(dataDir: string, file: string): void {
  mkdirSync(dataDir, { recursive: true });
  const pem = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({
    type: 'pkcs8',
    format: 'pem',
  });
  const tmp = `${file}.${process.pid}.${Date.now()}.tmp`;
  writeFileSync(tmp, pem, { mode: 0o600, flag: 'wx' });
  try {
    linkSync(tmp, file);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
  } finally {
    unlinkSync(tmp);
  }
}
