import { chmodSync, mkdtempSync, rmSync } from 'fs';
import { tmpdir } from 'os';
import { join } from 'path';
import { MongoClient } from 'mongodb';
import type { BackendRecycling } from '../../src/database/gateway-backend-recycling';
import { DocumentDbInstance, documentDbPaths, startDocumentDb } from '../../src/database/documentdb-process';
import { freePort } from '../../src/database/free-port';
import { parseEngineSettings } from '../../src/config/settings';

export interface OwnDocumentDb {
  db: DocumentDbInstance;
  client: MongoClient;
}

/**
 * An embedded DocumentDB of the suite's own (a temporary folder), for tests of the engine's own
 * behaviour, with a driver client; started before the suite's tests and removed after them.
 * Read its fields inside tests (they are set by the suite's beforeAll).
 */
export function ownDocumentDbForSuite(folderPrefix: string, recycling?: BackendRecycling): OwnDocumentDb {
  const dir = mkdtempSync(join(tmpdir(), folderPrefix));
  const own = {} as OwnDocumentDb;
  beforeAll(async () => {
    chmodSync(dir, 0o755);
    own.db = await startDocumentDb(
      documentDbPaths(parseEngineSettings(process.env)),
      dir,
      await freePort(),
      undefined,
      recycling,
    );
    own.client = new MongoClient(own.db.uri, { maxPoolSize: 4 });
  }, 120_000);
  afterAll(async () => {
    await own.client?.close();
    await own.db?.stop();
    rmSync(dir, { recursive: true, force: true });
  });
  return own;
}
