import { chmodSync, mkdtempSync } from 'fs';
import { tmpdir } from 'os';
import { join } from 'path';
import { resolveDatabase } from '../src/database/embedded-database';

/**
 * Starts one database for the whole e2e run, resolved like the app does (MONGO_URL, local mongod,
 * DocumentDB, download) in an ephemeral folder. Each test file then uses a database of its own.
 */
export default async function globalSetup(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'fhir-test-db-'));
  // Run as root, DocumentDB runs as the `postgres` OS user, which must reach the folder.
  chmodSync(dir, 0o755);
  const handle = await resolveDatabase(process.env.MONGO_URL, dir);
  process.env.TEST_MONGO_URL = handle.uri;
  process.env.TEST_DB_DIR = dir;
  // Which engine answers (plan expectations differ: test/query-plans.e2e-spec.ts sorted pages).
  process.env.TEST_DB_ENGINE = handle.engine;
  // DocumentDB with the extended RUM walks composite indexes in order (docs/storage.md "Sorted pages").
  process.env.TEST_DB_ORDERED_INDEXES =
    handle.engine !== 'documentdb' || handle.description?.includes('extended RUM') ? 'yes' : 'no';
  (globalThis as any).__TEST_DB__ = handle;
  process.stderr.write(
    `\ne2e database: ${handle.engine} ${handle.description ?? ''} on port ${new URL(handle.uri).port}\n`,
  );
}
