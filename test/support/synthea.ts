import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import request from 'supertest';
import { bundleResources, splitRefused, unpackedDirectory, type SyntheaArchiveVersion } from './synthea-data';
import type { TestApp } from './test-app';

/**
 * Synthea patient records (/work/shared/data/synthea) for e2e tests: one record = one
 * patient's transaction Bundle, with ids chosen client-side (each entry's own id, `urn:uuid:`
 * references rewritten to `Type/id`) so that it loads in bundles of at most 20 entries, in any split
 * (see the data README).
 */
export interface SyntheaRecord {
  /** The Patient's id. */
  patientId: string;
  resources: Json[];
  /**
   * Synthea's own defects that validation refuses (R4: 8 Observations with non-UCUM units; STU3 also
   * every ExplanationOfBenefit), kept out of `resources`: one would fail its whole transaction.
   */
  refused: Json[];
}

// Test data is read freely: `any` values keep the specs short.
type Json = Record<string, any>;

function recordOf(text: string, version: SyntheaArchiveVersion): SyntheaRecord | undefined {
  const all = bundleResources(text) as Json[];
  const { accepted: resources, refused } = splitRefused(version, all);
  const patient = resources.find((resource) => resource.resourceType === 'Patient');
  return patient
    ? { patientId: String(patient.id), resources, refused: refused.map((r) => r.resource) }
    : undefined;
}

/** The `count` smallest patient records of a version (smallest first: quick to load, still real). */
export function syntheaRecords(version: SyntheaArchiveVersion, count: number, skip = 0): SyntheaRecord[] {
  const directory = unpackedDirectory(version);
  const files = readdirSync(directory)
    .filter((file) => file.endsWith('.json') && /^[A-Z][a-z]+_/.test(file))
    .map((file) => ({ file, size: statSync(join(directory, file)).size }))
    .sort((a, b) => a.size - b.size || a.file.localeCompare(b.file));
  const records: SyntheaRecord[] = [];
  for (const { file } of files) {
    const record = recordOf(readFileSync(join(directory, file), 'utf8'), version);
    if (record) records.push(record);
    if (records.length >= skip + count) break;
  }
  return records.slice(skip);
}

/** Stores resources through `POST /{v}` as transaction Bundles of PUT entries, at most 20 each. */
export async function postInBundles(
  t: TestApp,
  headers: Record<string, string>,
  resources: ReadonlyArray<Json>,
  version: SyntheaArchiveVersion = 'r4',
): Promise<void> {
  for (let i = 0; i < resources.length; i += 20) {
    const entry = resources.slice(i, i + 20).map((resource) => ({
      resource,
      request: { method: 'PUT', url: `${String(resource.resourceType)}/${String(resource.id)}` },
    }));
    const res = await request(t.server)
      .post(`/${version}`)
      .set(headers)
      .set('Content-Type', 'application/fhir+json')
      .send(JSON.stringify({ resourceType: 'Bundle', type: 'transaction', entry }));
    const failed = (res.body?.entry ?? []).filter(
      (e: { response?: { status?: string } }) => !/^20[01]/.test(e.response?.status ?? ''),
    );
    if (res.status !== 200 || failed.length > 0) {
      throw new Error(
        `loading Synthea failed: ${res.status} ${JSON.stringify(failed.length ? failed[0] : res.body).slice(0, 500)}`,
      );
    }
  }
}

/** Loads the `count` smallest Synthea patients (after `skip`) for the user the headers name. */
export async function loadSyntheaPatients(
  t: TestApp,
  headers: Record<string, string>,
  options: { count: number; skip?: number; version?: SyntheaArchiveVersion },
): Promise<SyntheaRecord[]> {
  const records = syntheaRecords(options.version ?? 'r4', options.count, options.skip ?? 0);
  for (const record of records) await postInBundles(t, headers, record.resources, options.version ?? 'r4');
  return records;
}

/** Resources of one type across records (the expected answers of search tests are computed from these). */
export function resourcesOfType(records: readonly SyntheaRecord[], type: string): Array<Record<string, any>> {
  return records.flatMap((record) => record.resources.filter((resource) => resource.resourceType === type));
}

/** The ids of a searchset page's entries of one search mode (default `match`). */
export function entryIds(
  bundle: { entry?: Array<{ resource: { id: string }; search?: { mode?: string } }> },
  mode = 'match',
): string[] {
  return (bundle.entry ?? [])
    .filter((entry) => entry.search?.mode === mode)
    .map((entry) => entry.resource.id);
}
