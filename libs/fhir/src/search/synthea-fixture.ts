import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

/**
 * Test and benchmark support (not production code): the Synthea sample records of
 * /work/shared/data/synthea (DESIGN §6), unpacked once into the OS temp folder — never into the repo.
 * References are rewritten from `urn:uuid:` placeholders to `Type/id`, as the store would do on import.
 */

export type SyntheaArchiveVersion = 'r4' | 'stu3' | 'dstu2';

const ARCHIVE_DIRECTORY = process.env.SYNTHEA_DIR ?? resolve(__dirname, '../../../../../shared/data/synthea');

export function syntheaArchivePath(version: SyntheaArchiveVersion): string {
  return join(ARCHIVE_DIRECTORY, `synthea-${version}.tgz`);
}

export function syntheaAvailable(version: SyntheaArchiveVersion): boolean {
  return existsSync(syntheaArchivePath(version));
}

/** The folder of the version's unpacked bundle files (unpacked on first use). */
export function unpackedDirectory(version: SyntheaArchiveVersion): string {
  const target = join(tmpdir(), `fhir-search-synthea-${version}`);
  if (!existsSync(join(target, version))) {
    const staging = `${target}.${process.pid}`;
    mkdirSync(staging, { recursive: true });
    execFileSync('tar', ['xzf', syntheaArchivePath(version), '-C', staging]);
    try {
      renameSync(staging, target);
    } catch {
      // Another worker unpacked it first: use theirs.
    }
  }
  return join(target, version);
}

interface BundleEntry {
  fullUrl?: string;
  resource?: Record<string, unknown>;
}

/** Every resource of the version's sample bundles (bundle files in name order, up to `maxBundles`). */
export function loadSyntheaResources(
  version: SyntheaArchiveVersion,
  maxBundles = Infinity,
): Array<Record<string, unknown>> {
  const directory = unpackedDirectory(version);
  const files = readdirSync(directory)
    .filter((file) => file.endsWith('.json'))
    .sort()
    .slice(0, maxBundles);
  const resources: Array<Record<string, unknown>> = [];
  for (const file of files) {
    const text = readFileSync(join(directory, file), 'utf8');
    const bundle = JSON.parse(text) as { entry?: BundleEntry[] };
    const placeholders = new Map<string, string>();
    for (const entry of bundle.entry ?? []) {
      const resource = entry.resource;
      if (entry.fullUrl?.startsWith('urn:uuid:') && resource && typeof resource.resourceType === 'string') {
        const id = typeof resource.id === 'string' ? resource.id : entry.fullUrl.slice('urn:uuid:'.length);
        placeholders.set(entry.fullUrl, `${resource.resourceType}/${id}`);
      }
    }
    const rewritten = text.replace(/urn:uuid:[0-9a-fA-F-]{36}/g, (urn) => placeholders.get(urn) ?? urn);
    const rewrittenBundle = JSON.parse(rewritten) as { entry?: BundleEntry[] };
    for (const entry of rewrittenBundle.entry ?? []) if (entry.resource) resources.push(entry.resource);
  }
  return resources;
}
