import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FhirVersion } from '../definitions/fhir-version';
import { validateResource } from './validate-resource';

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

/**
 * Synthea's own defects that the reference validator reports too, refused on write here:
 * R4 and STU3 have 8 Observations with UCUM codes like `(score)`; STU3 has 3,697
 * ExplanationOfBenefit.type codings outside the required claim-type value set. Loaders drop them
 * before building transaction bundles (one refused entry fails a whole bundle) and say how many.
 */
export const SYNTHEA_KNOWN_DEFECTS: Readonly<Record<FhirVersion, Readonly<Record<string, number>>>> = {
  r4: { 'Observation http://unitsofmeasure.org': 8 },
  stu3: {
    'Observation http://unitsofmeasure.org': 8,
    'ExplanationOfBenefit http://hl7.org/fhir/ValueSet/claim-type': 3697,
  },
  dstu2: {},
};

/** Splits resources into those the validator accepts and those it refuses (with their first error). */
export function splitRefused<T>(
  version: FhirVersion,
  resources: readonly T[],
): { accepted: T[]; refused: { resource: T; reason: string }[] } {
  const accepted: T[] = [];
  const refused: { resource: T; reason: string }[] = [];
  for (const resource of resources) {
    const error = validateResource(version, resource).find((issue) => issue.severity === 'error');
    if (error) refused.push({ resource, reason: `${error.path}: ${error.message}` });
    else accepted.push(resource);
  }
  return { accepted, refused };
}
