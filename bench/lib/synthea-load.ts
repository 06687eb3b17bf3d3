import { loadSyntheaResources } from '../../test/support/synthea-data';
import { splitRefused } from '../../test/support/synthea-data';
import { httpJson, inParallel, type BenchServer, type BenchUser } from './bench-server';

/**
 * Loads the Synthea R4 sample (../shared/data/synthea, 38,971 resources) through the HTTP API in
 * transaction bundles of 20 with ids chosen client-side (the data README's recipe: each entry keeps
 * its uuid as id, `urn:uuid:` references rewritten to `Type/id`), patients spread round-robin over
 * `users`, `parallel` bundles in flight.
 */
export interface SyntheaLoadOptions {
  users: readonly BenchUser[];
  parallel: number;
  /** Only the first N patient bundles (default all 100). */
  maxPatients?: number;
  /** Resources per posted bundle (at most 20). */
  bundleSize?: number;
  /**
   * How many times the sample is loaded (default 1): copy k > 0 gets fresh ids (every uuid of the
   * record, ids and references alike, suffixed `-k`), so 5 copies are ≈195,000 resources.
   */
  copies?: number;
  onProgress?: (done: number, total: number) => void;
}

export interface SyntheaLoadResult {
  resources: number;
  /** Synthea's own defects the validator refuses (8 UCUM codes in R4), left out of the bundles. */
  refusedByValidation: number;
  bundles: number;
  /** Entries the server refused (e.g. a stricter validator's UCUM checks): counted, not fatal. */
  failedEntries: number;
  /** Bundles answered with an error as a whole (a transaction refused for one bad entry). */
  failedBundles: number;
  seconds: number;
  resourcesPerSecond: number;
  /** Ids of the Observations stored, per user index (for read benchmarks). */
  observationIds: Map<number, string[]>;
}

interface Batch {
  user: number;
  /** Which copy of the sample (ids made fresh when the bundle is posted: memory stays one sample). */
  copy: number;
  resources: Array<Record<string, unknown>>;
}

const UUID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/gi;

/** Copy `copy` of a resource: itself for copy 0, else every uuid suffixed (made when posted). */
function copyOf(resource: Record<string, unknown>, copy: number): Record<string, unknown> {
  if (copy === 0) return resource;
  return JSON.parse(JSON.stringify(resource).replace(UUID, (uuid) => `${uuid}-${copy}`)) as Record<
    string,
    unknown
  >;
}

/** The resources of each patient record, split into bundles of `size`. */
export function syntheaR4Batches(
  users: number,
  size = 20,
  maxPatients = Infinity,
  copies = 1,
): { batches: Batch[]; refused: number } {
  // One refused entry fails its whole transaction: drop the known defects first, and count them.
  const { accepted: all, refused } = splitRefused('r4', loadSyntheaResources('r4', maxPatients));
  if (refused.length > 0)
    console.error(
      `${refused.length} Synthea resources refused by validation, not posted (e.g. ${refused[0].reason})`,
    );
  const batches: Batch[] = [];
  let patient = -1;
  for (let copy = 0; copy < copies; copy++) {
    let current: Batch | undefined;
    for (const resource of all) {
      if (resource.resourceType === 'Patient') patient++;
      const user = Math.max(patient, 0) % users;
      if (!current || current.user !== user || current.resources.length >= size) {
        current = { user, copy, resources: [] };
        batches.push(current);
      }
      current.resources.push(resource);
    }
  }
  return { batches, refused: refused.length };
}

export async function loadSyntheaR4(
  server: BenchServer,
  options: SyntheaLoadOptions,
): Promise<SyntheaLoadResult> {
  const { batches, refused } = syntheaR4Batches(
    options.users.length,
    options.bundleSize ?? 20,
    options.maxPatients,
    options.copies,
  );
  const observationIds = new Map<number, string[]>();
  let resources = 0;
  let failedEntries = 0;
  let failedBundles = 0;
  let done = 0;
  const start = process.hrtime.bigint();
  await inParallel(batches.length, options.parallel, async (i) => {
    const batch = { ...batches[i], resources: batches[i].resources.map((r) => copyOf(r, batches[i].copy)) };
    const user = options.users[batch.user];
    const bundle = {
      resourceType: 'Bundle',
      type: 'transaction',
      entry: batch.resources.map((resource) => ({
        fullUrl: `urn:uuid:${String(resource.id)}`,
        resource,
        request: { method: 'POST', url: String(resource.resourceType) },
      })),
    };
    const res = await httpJson(server.baseUrl, 'POST', '/r4', bundle, {
      Authorization: `Bearer ${user.accessToken}`,
    });
    if (res.status >= 500 || res.status === 0)
      throw new Error(`bundle ${i} failed: ${res.status} ${JSON.stringify(res.body).slice(0, 500)}`);
    if (res.status !== 200) {
      // A transaction is all or nothing: a refused entry refuses the bundle (4xx). Counted.
      failedBundles++;
      failedEntries += batch.resources.length;
      if (failedBundles <= 5) console.error(`bundle refused: ${JSON.stringify(res.body).slice(0, 400)}`);
      done++;
      return;
    }
    res.body.entry.forEach((entry: any, index: number) => {
      if (!String(entry.response.status).startsWith('20')) {
        failedEntries++;
        if (failedEntries <= 5)
          console.error(`entry failed: ${JSON.stringify(entry.response).slice(0, 400)}`);
        return;
      }
      resources++;
      const resource = batch.resources[index];
      if (resource.resourceType === 'Observation') {
        const list = observationIds.get(batch.user) ?? [];
        list.push(String(resource.id));
        observationIds.set(batch.user, list);
      }
    });
    done++;
    if (done % 200 === 0) options.onProgress?.(done, batches.length);
  });
  const seconds = Number(process.hrtime.bigint() - start) / 1e9;
  return {
    resources,
    refusedByValidation: refused,
    bundles: batches.length,
    failedEntries,
    failedBundles,
    seconds,
    resourcesPerSecond: resources / seconds,
    observationIds,
  };
}
