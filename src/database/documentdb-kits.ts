import { existsSync } from 'fs';
import { join, resolve } from 'path';
import type { EngineSettings } from '../config/settings';
import type { ResourceRowStorage } from './resource-row-storage';

/**
 * The DocumentDB kits the embedded engine runs on (docs/storage.md "Engines"):
 * - `next`: DocumentDB 0.112 with its extended RUM, on a private PostgreSQL 15 tree under
 *   /opt/documentdb-next; its composite indexes are walked in sort order, so a sorted page stops
 *   after the page instead of sorting every match.
 * - `0.108`: DocumentDB 0.108 in the system's PostgreSQL 15 (/usr/lib/postgresql/15) and its gateway
 *   in /opt/documentdb; kept so that a machine that has not installed the new kit keeps working.
 * Both install side by side (the distributed kit builds on the 0.108 one).
 */
export type DocumentDbKit = 'next' | '0.108';

const KITS: Record<DocumentDbKit, { pgBinDir: string; gatewayBin: string; install: string }> = {
  next: {
    pgBinDir: '/opt/documentdb-next/pg/usr/lib/postgresql/15/bin',
    gatewayBin: '/opt/documentdb-next/bin/documentdb_gateway',
    install: 'bash ../shared/engines/documentdb-next/install.sh',
  },
  '0.108': {
    pgBinDir: '/usr/lib/postgresql/15/bin',
    gatewayBin: '/opt/documentdb/bin/documentdb_gateway',
    install: 'bash ../shared/engines/documentdb/install.sh',
  },
};

/** The one command that installs the default kit (as root, from the project's folder). */
export const INSTALL_COMMAND = KITS.next.install;

/** Where PostgreSQL 15 and the gateway are, and how `resources` rows are stored. */
export interface DocumentDbPaths {
  pgBinDir: string;
  gatewayBin: string;
  resourceRows: ResourceRowStorage;
}

/** The engine settings `documentDbPaths` reads. */
export type DocumentDbChoice = Pick<EngineSettings, 'kit' | 'pgBinDir' | 'gatewayBin' | 'resourceRows'>;

/**
 * The settings' kit (`next` or `0.108`); unset, the new kit when it is installed, else the 0.108
 * one. Binaries set elsewhere (DOCUMENTDB_PG_BIN_DIR / DOCUMENTDB_GATEWAY_BIN) win over the kit's paths.
 */
export function documentDbPaths(engine: DocumentDbChoice): DocumentDbPaths {
  const kit = KITS[engine.kit ?? (missingDocumentDb(KITS.next) ? '0.108' : 'next')];
  return {
    pgBinDir: engine.pgBinDir || kit.pgBinDir,
    gatewayBin: engine.gatewayBin || kit.gatewayBin,
    resourceRows: engine.resourceRows,
  };
}

/**
 * PostgreSQL derives its library and share folders from its binary's location
 * (`<prefix>/lib/postgresql/15/bin` → `<prefix>/share/postgresql/15`), so the extensions of a tree
 * are found from its bin folder: the system's for /usr/lib/postgresql/15/bin, the private copy's
 * for the new kit.
 */
export function extensionDir(paths: Pick<DocumentDbPaths, 'pgBinDir'>): string {
  return resolve(paths.pgBinDir, '../../../../share/postgresql/15/extension');
}

function libDir(paths: Pick<DocumentDbPaths, 'pgBinDir'>): string {
  return resolve(paths.pgBinDir, '../lib');
}

/** Whether this PostgreSQL tree holds DocumentDB's extended RUM (indexes walked in order). */
export function hasExtendedRum(paths: Pick<DocumentDbPaths, 'pgBinDir'>): boolean {
  return (
    existsSync(join(extensionDir(paths), 'documentdb_extended_rum.control')) &&
    existsSync(join(libDir(paths), 'pg_documentdb_extended_rum.so'))
  );
}

/** Why this machine cannot run DocumentDB from `paths`, or undefined when every file is there. */
export function missingDocumentDb(
  paths: Pick<DocumentDbPaths, 'pgBinDir' | 'gatewayBin'>,
): string | undefined {
  const need = [join(paths.pgBinDir, 'postgres'), join(paths.pgBinDir, 'initdb'), paths.gatewayBin];
  const absent = need.filter((p) => !existsSync(p));
  if (absent.length > 0) return `not installed (missing ${absent.join(', ')})`;
  const control = join(extensionDir(paths), 'documentdb.control');
  if (!existsSync(control))
    return `the documentdb extension is not installed in this PostgreSQL (${control})`;
  return undefined;
}

/**
 * The libraries loaded at start and, on a tree with the extended RUM, the settings that make new
 * indexes use it (the kit README's list, as upstream's own extended-RUM tests set them):
 * `documentdb_rum` loads its code from the extended RUM instead of Debian's rum.so, and
 * `createIndexes` builds with the `extended_rum` handler, whose composite classes can ORDER BY.
 */
export function preloadAndIndexSettings(paths: DocumentDbPaths): string[] {
  if (!hasExtendedRum(paths))
    return ["shared_preload_libraries = 'pg_cron, pg_documentdb_core, pg_documentdb'"];
  return [
    "shared_preload_libraries = 'pg_cron, pg_documentdb_core, pg_documentdb, pg_documentdb_extended_rum'",
    "documentdb.rum_library_load_option = 'require_documentdb_extended_rum'",
    "documentdb.alternate_index_handler_name = 'extended_rum'",
  ];
}
