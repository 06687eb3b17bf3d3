import { createHash, randomBytes } from 'crypto';
import { linkSync, mkdirSync, readFileSync, unlinkSync, writeFileSync } from 'fs';
import { join } from 'path';
import type { Settings } from '../../config/settings';

export const EXPORT_SIGNING_KEY = Symbol('EXPORT_SIGNING_KEY');

/**
 * The HMAC key of the file-link tokens. Every instance behind a load balancer must derive the same
 * key, so in production it comes from the configured JWT signing key (hashed with a purpose label,
 * so the two uses never share raw key material). Without one (development), a random key is kept in
 * `${DATA_DIR}/export-hmac.key`, published with an atomic hard link of a fully written temporary
 * file, so concurrent starts (parallel test files) agree on one key and never read a half-written one.
 */
export function exportSigningKey(settings: Settings): Buffer {
  if (settings.jwt.privateKeyPem) {
    return createHash('sha256')
      .update('bulk-export-file-token\n')
      .update(settings.jwt.privateKeyPem)
      .digest();
  }
  const file = join(settings.dataDir, 'export-hmac.key');
  mkdirSync(settings.dataDir, { recursive: true });
  const temporary = `${file}.${process.pid}.${randomBytes(4).toString('hex')}`;
  writeFileSync(temporary, randomBytes(32).toString('hex'), { mode: 0o600 });
  try {
    linkSync(temporary, file);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  } finally {
    unlinkSync(temporary);
  }
  const hex = readFileSync(file, 'utf8').trim();
  if (!/^[0-9a-f]{64}$/.test(hex)) {
    throw new Error(`${file} must hold 64 hex characters; delete it to generate a new key`);
  }
  return Buffer.from(hex, 'hex');
}
