import { Injectable } from '@nestjs/common';
import type { mongo } from 'mongoose';
import type { FhirVersion } from '@app/fhir';
import type { ResourceDoc } from './documents';
import { ResourceStorage } from './resource-storage';

/** One rebuilt index: applied only if the document still holds version `vid`. */
export interface IndexUpdate {
  key: string;
  vid: number;
  idx: object;
}

/**
 * Operator-level access for `store reindex` (CLI only, never behind an HTTP route, like the store's
 * maintenance repository): walks every tenant's current documents of a version in `_id` order.
 */
@Injectable()
export class ReindexRepository {
  constructor(private readonly storage: ResourceStorage) {}

  private get resources(): mongo.Collection<ResourceDoc> {
    return this.storage.unscoped().resources;
  }

  private scope(version: FhirVersion, type?: string): mongo.Filter<ResourceDoc> {
    return type ? { v: version, t: type, del: false } : { v: version, del: false };
  }

  count(version: FhirVersion, type?: string): Promise<number> {
    return this.resources.countDocuments(this.scope(version, type));
  }

  /** The next batch after `afterKey` (JSON and version only). */
  nextBatch(version: FhirVersion, type: string | undefined, afterKey: string | undefined, size: number) {
    const filter =
      afterKey === undefined
        ? this.scope(version, type)
        : { ...this.scope(version, type), _id: { $gt: afterKey } };
    return this.resources
      .find(filter, { projection: { _id: 1, vid: 1, json: 1 } })
      .sort({ _id: 1 })
      .limit(size)
      .toArray();
  }

  /**
   * Compare-and-set on `vid` (docs/storage.md write protocol): a document a writer changed since it
   * was read already carries the index of its new version and is left alone. Returns how many changed.
   */
  async applyIndexes(updates: readonly IndexUpdate[]): Promise<number> {
    if (updates.length === 0) return 0;
    const result = await this.resources.bulkWrite(
      updates.map((update) => ({
        updateOne: { filter: { _id: update.key, vid: update.vid }, update: { $set: { idx: update.idx } } },
      })),
      { ordered: false },
    );
    return result.matchedCount;
  }
}
