import { execFileSync } from 'child_process';
import { parseEngineSettings, type EngineSettings } from '../config/settings';
import { existsSync, mkdirSync } from 'fs';
import { join, resolve } from 'path';
import { documentDbPaths, INSTALL_COMMAND, missingDocumentDb } from './documentdb-kits';
import { installKitBeside, kitBeside } from './kit-install';
import { DataDirInUseError, openDocumentDb } from './embedded-instance';
import type { InstanceRole } from './instance-record';
import { DEFAULT_INDEX_UPKEEP } from './index-upkeep';

export type EngineKind = 'external' | 'mongod' | 'documentdb' | 'mongodb-memory-server-download';

export interface DatabaseHandle {
  uri: string;
  engine: EngineKind;
  /** Engine and version when known at start (an embedded engine), for the boot log. */
  description?: string;
  /** Stops the embedded engine; a no-op for an external MONGO_URL. */
  stop(): Promise<void>;
}

export class NoDatabaseError extends Error {}

export interface ResolveOptions {
  /**
   * `server` (npm start): owns and supervises the embedded DocumentDB of its DATA_DIR, refuses a
   * folder another server runs. `tool` (default: CLI, tests, benches): attaches to a running one.
   */
  role?: InstanceRole;
  /** Server only: the embedded database's children could not be restarted; the app must exit. */
  onGiveUp?: (error: Error) => void;
}

function findMongod(engine: EngineSettings): string | undefined {
  if (engine.mongodBinary && existsSync(engine.mongodBinary)) return engine.mongodBinary;
  try {
    const p = execFileSync('sh', ['-c', 'command -v mongod'], { encoding: 'utf8' }).trim();
    return p || undefined;
  } catch {
    return undefined;
  }
}

async function startMongoMemoryServer(dataDir: string, systemBinary?: string): Promise<DatabaseHandle> {
  // Imported lazily: the package is only needed when this engine is chosen.
  const { MongoMemoryServer } = await import('mongodb-memory-server-core');
  const dbPath = join(dataDir, 'mongod');
  mkdirSync(dbPath, { recursive: true });
  const server = await MongoMemoryServer.create({
    instance: { dbPath, storageEngine: 'wiredTiger' },
    binary: systemBinary ? { systemBinary } : undefined,
  });
  return {
    uri: server.getUri(),
    engine: systemBinary ? 'mongod' : 'mongodb-memory-server-download',
    stop: async () => {
      await server.stop({ doCleanup: false });
    },
  };
}

/**
 * Resolves the database in the order the README gives: MONGO_URL; a local mongod; a local
 * DocumentDB (PostgreSQL 15 + documentdb + its gateway) under `dataDir`; mongodb-memory-server's
 * own download. When nothing works the error lists every engine tried and why it failed.
 */
export async function resolveDatabase(
  mongoUrl: string | undefined,
  dataDir: string,
  engine: EngineSettings = parseEngineSettings(process.env),
  opts: ResolveOptions = {},
): Promise<DatabaseHandle> {
  if (mongoUrl) return { uri: mongoUrl, engine: 'external', stop: async () => undefined };
  const dir = resolve(dataDir);
  const failures: string[] = [];

  const mongod = findMongod(engine);
  if (mongod) {
    try {
      return await startMongoMemoryServer(dir, mongod);
    } catch (e) {
      failures.push(`local mongod (${mongod}): ${(e as Error).message}`);
    }
  } else {
    failures.push('local mongod: not found (MONGOMS_SYSTEM_BINARY unset, no mongod on PATH)');
  }

  let paths = documentDbPaths(engine);
  let missing = missingDocumentDb(paths);
  const kit = kitBeside(process.cwd());
  // `npm start` run as root on a machine without the engine installs the kit found beside the
  // project (its output shown as it goes); anyone else is told the command.
  if (
    missing &&
    kit &&
    opts.role === 'server' &&
    process.getuid?.() === 0 &&
    !engine.pgBinDir &&
    !engine.kit
  ) {
    await installKitBeside(kit, (line) => process.stderr.write(`documentdb install: ${line}\n`));
    paths = documentDbPaths(engine);
    missing = missingDocumentDb(paths);
  }
  if (!missing) {
    try {
      const role = opts.role ?? 'tool';
      const onGiveUp = opts.onGiveUp;
      const running = await openDocumentDb(paths, join(dir, 'documentdb'), {
        role,
        supervise: role === 'server' && onGiveUp ? { onGiveUp } : undefined,
        // the owner that runs for days keeps the indexes small; a tool (CLI, tests) only when asked
        // (EMBEDDED_INDEX_UPKEEP=on: the soak benchmark, whose process owns the engine)
        indexUpkeep: role === 'server' || engine.indexUpkeep ? DEFAULT_INDEX_UPKEEP : undefined,
        // a server waits as long as an operator command may run on the folder's database
        waitMs: role === 'server' ? 10 * 60_000 : undefined,
      });
      return { uri: running.uri, engine: 'documentdb', description: running.version, stop: running.stop };
    } catch (e) {
      if (e instanceof DataDirInUseError) throw e;
      failures.push(`DocumentDB: ${(e as Error).message}`);
    }
  } else {
    failures.push(`DocumentDB: ${missing}`);
  }
  if (kit && !engine.downloadDisabled) {
    failures.push(
      `mongodb-memory-server download: not tried (the DocumentDB kit is beside the project: ${kit})`,
    );
  }

  // With the kit beside the project this is one of the project's machines, which reach no MongoDB
  // download site: its retries would keep a newcomer waiting minutes for nothing.
  if (!engine.downloadDisabled && !kit) {
    try {
      return await startMongoMemoryServer(dir);
    } catch (e) {
      failures.push(`mongodb-memory-server download: ${(e as Error).message.split('\n')[0]}`);
    }
  }

  throw new NoDatabaseError(
    [
      'No database available. Tried, in order:',
      ...failures.map((f) => `  - ${f}`),
      'Provide one of: MONGO_URL=mongodb://…; a mongod on PATH (or MONGOMS_SYSTEM_BINARY);',
      `or DocumentDB: install it with \`${INSTALL_COMMAND}\` (as root, from the project's folder, ~15 s).`,
    ].join('\n'),
  );
}
