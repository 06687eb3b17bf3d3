import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FhirVersion } from '../definitions/fhir-version';

/** Shared Synthea sample sets (transaction Bundles per patient), see /work/shared/data/synthea/README.md. */
export const SYNTHEA_DIRECTORY = process.env.SYNTHEA_DIR ?? '/work/shared/data/synthea';

/**
 * Unpacks `synthea-<version>.tgz` into a fresh temporary directory and returns every resource: the
 * `entry.resource` of each Bundle, and files holding a single resource as they are. Nothing is kept on disk.
 */
export function loadSyntheaResources(version: FhirVersion): unknown[] {
  const directory = mkdtempSync(join(tmpdir(), `synthea-${version}-`));
  try {
    execFileSync('tar', ['xzf', join(SYNTHEA_DIRECTORY, `synthea-${version}.tgz`), '-C', directory]);
    const resources: unknown[] = [];
    const root = join(directory, version);
    for (const file of readdirSync(root).sort()) {
      if (!file.endsWith('.json')) continue;
      const json = JSON.parse(readFileSync(join(root, file), 'utf8')) as {
        resourceType?: string;
        type?: string;
        entry?: { resource?: unknown }[];
      };
      if (json.resourceType === 'Bundle' && json.type === 'transaction') {
        for (const entry of json.entry ?? []) resources.push(entry.resource);
      } else {
        resources.push(json);
      }
    }
    return resources;
  } finally {
    rmSync(directory, { recursive: true, force: true });
  }
}
