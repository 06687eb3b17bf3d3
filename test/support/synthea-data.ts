import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { validateResource, type FhirVersion } from '@app/fhir';

/**
 * The one loader of the Synthea sample records (test and benchmark support, not production code):
 * transaction Bundles per patient, as `synthea-<version>.tgz` archives in `SYNTHEA_DIR`, by default
 * the shared data folder beside the repository (`../shared/data/synthea`, see its README). An
 * archive is unpacked once into the OS temp folder, never into the repository.
 */
export type SyntheaArchiveVersion = 'r4' | 'stu3' | 'dstu2';

export const SYNTHEA_DIRECTORY =
  process.env.SYNTHEA_DIR ?? resolve(__dirname, '../..', '../shared/data/synthea');

export function syntheaArchivePath(version: SyntheaArchiveVersion): string {
  return join(SYNTHEA_DIRECTORY, `synthea-${version}.tgz`);
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

/**
 * The resources of one bundle file, `urn:uuid:` references rewritten to `Type/id` as the store does
 * on a transaction (the entry's own id, else the uuid).
 */
export function bundleResources(text: string): Array<Record<string, unknown>> {
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
  return (rewrittenBundle.entry ?? []).flatMap((entry) => (entry.resource ? [entry.resource] : []));
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
  return files.flatMap((file) => bundleResources(readFileSync(join(directory, file), 'utf8')));
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
