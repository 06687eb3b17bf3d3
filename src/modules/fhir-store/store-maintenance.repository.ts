import { Injectable } from '@nestjs/common';
import { InjectConnection } from '@nestjs/mongoose';
import type { Connection } from 'mongoose';
import { byIds } from './resource.repository';
import { LONG_CURSOR } from '../../database/ensure-indexes';
import { HISTORY_COLLECTION, HistoryDoc, RESOURCES_COLLECTION, ResourceDoc } from './resource-documents';

const BATCH = 500;

/**
 * Operator-level access for `store check` (CLI only, never behind an HTTP route): scans every
 * tenant's documents in `_id` order, in batches, to find what a crash left behind.
 */
@Injectable()
export class StoreMaintenanceRepository {
  constructor(@InjectConnection() private readonly connection: Connection) {}

  private get resources() {
    return this.connection.db!.collection<ResourceDoc>(RESOURCES_COLLECTION);
  }

  private get history() {
    return this.connection.db!.collection<HistoryDoc>(HISTORY_COLLECTION);
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
    const docs = await byIds(this.resources, keys, {});
    return new Set(docs.map((d) => d._id));
  }

  async existingHistoryKeys(keys: readonly string[]): Promise<Set<string>> {
    const docs = await byIds(this.history, keys, {});
    return new Set(docs.map((d) => d._id));
  }

  async deleteHistoryOf(resourceKeys: readonly string[]): Promise<number> {
    if (resourceKeys.length === 0) return 0;
    return (await this.history.deleteMany({ rk: { $in: [...resourceKeys] } })).deletedCount;
  }
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
