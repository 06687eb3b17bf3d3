import { Injectable } from '@nestjs/common';
import type { mongo } from 'mongoose';
import type { FhirVersion } from '@app/fhir';
import { LONG_CURSOR } from '../database/ensure-indexes';
import type { HistoryDoc, ResourceDoc } from './documents';
import { ResourceStorage } from './resource-storage';
import { INDEX_NAMES } from './search/search-indexes';
import { insertIgnoringDuplicates } from './tenant-scope';

const BATCH = 500;

/**
 * Operator-level access for `store check` (CLI only, never behind an HTTP route): scans every
 * tenant's documents in `_id` order, in batches, to find what a crash left behind.
 */
@Injectable()
export class StoreMaintenanceRepository {
  constructor(private readonly storage: ResourceStorage) {}

  private get resources(): mongo.Collection<ResourceDoc> {
    return this.storage.unscoped().resources;
  }

  private get history(): mongo.Collection<HistoryDoc> {
    return this.storage.unscoped().history;
  }

  /** Current documents (without `idx`), in batches. */
  async *currentBatches(): AsyncGenerator<ResourceDoc[]> {
    yield* batches(this.resources.find({}, { projection: { idx: 0 }, ...LONG_CURSOR }).sort({ _id: 1 }));
  }

  /** History rows, in batches. */
  async *historyBatches(): AsyncGenerator<HistoryDoc[]> {
    yield* batches(this.history.find({}, LONG_CURSOR).sort({ _id: 1 }));
  }

  async existingCurrentKeys(keys: readonly string[]): Promise<Set<string>> {
    return existingKeys(this.resources, keys);
  }

  async existingHistoryKeys(keys: readonly string[]): Promise<Set<string>> {
    return existingKeys(this.history, keys);
  }

  /**
   * The versioned targets (`Type/id/_history/vid`) of the Provenances of one tenant and version that
   * reference any of `references` (`Type/id`): a bundle's Provenance lists every version it wrote.
   */
  async provenanceTargets(v: FhirVersion, c: string, references: readonly string[]): Promise<Set<string>> {
    const targets = new Set<string>();
    if (references.length === 0) return targets;
    const provenances = this.resources.find(
      { v, c, t: 'Provenance', 'idx.ref': { $in: references.map((r) => `target|${r}`) }, del: false },
      { projection: { json: 1 }, hint: INDEX_NAMES.ref, ...LONG_CURSOR },
    );
    for await (const { json } of provenances) {
      const target = (JSON.parse(json ?? '{}') as { target?: Array<{ reference?: string }> }).target ?? [];
      for (const { reference } of target) if (reference) targets.add(reference);
    }
    return targets;
  }

  /** Repairs: history rows and current documents of any tenant; those already there are kept. */
  async insertMissing(docs: {
    current?: readonly ResourceDoc[];
    history?: readonly HistoryDoc[];
  }): Promise<void> {
    await insertIgnoringDuplicates(this.resources, docs.current ?? []);
    await insertIgnoringDuplicates(this.history, docs.history ?? []);
  }

  async deleteHistoryOf(resourceKeys: readonly string[]): Promise<number> {
    if (resourceKeys.length === 0) return 0;
    return (await this.history.deleteMany({ rk: { $in: [...resourceKeys] } })).deletedCount;
  }
}

async function existingKeys<T extends { _id: string }>(
  collection: mongo.Collection<T>,
  keys: readonly string[],
): Promise<Set<string>> {
  if (keys.length === 0) return new Set();
  const docs = await collection
    .find({ _id: { $in: [...keys] } } as mongo.Filter<T>, { projection: { _id: 1 } })
    .toArray();
  return new Set(docs.map((d) => d._id));
}

async function* batches<T>(cursor: AsyncIterable<T>): AsyncGenerator<T[]> {
  let batch: T[] = [];
  for await (const doc of cursor) {
    batch.push(doc);
    if (batch.length >= BATCH) {
      yield batch;
      batch = [];
    }
  }
  if (batch.length > 0) yield batch;
}
