import { Injectable } from '@nestjs/common';
import { InjectModel } from '@nestjs/mongoose';
import { Model, Schema } from 'mongoose';
import type { Collection, Filter, FindCursor } from 'mongodb';
import type { FhirVersion } from '@app/fhir';
import { LONG_CURSOR } from '../../database/ensure-indexes';
import { TenantContext, tenantFilter } from '../../tenancy/tenant-context';

/**
 * Read-only view of the `resources` collection (docs/storage.md) with the indexes export needs.
 * `del` and `lu` sit after `_id` so that one index answers "this tenant's live resources of a type
 * updated in (since, transactionTime], in key order" without reading a document: the count and the
 * file boundaries are covered index scans on MongoDB (issue 6, item 4).
 */
export interface StoredResourceDoc {
  _id: string;
  v: FhirVersion;
  c: string;
  u: number;
  t: string;
  id: string;
  vid: number;
  lu: Date;
  del: boolean;
  json: string | null;
}

export const EXPORT_RESOURCE_MODEL = 'ExportResource';

export const ExportResourceSchema = new Schema<StoredResourceDoc>(
  {
    _id: String,
    v: String,
    c: String,
    u: Number,
    t: String,
    id: String,
    vid: Number,
    lu: Date,
    del: Boolean,
  },
  // Indexes are created at boot by DatabaseLifecycle (ensureIndexes, skipping existing key patterns).
  // autoCreate off: the FHIR store owns the collection; createIndexes creates it when missing.
  { collection: 'resources', strict: false, versionKey: false, autoCreate: false },
);
ExportResourceSchema.index({ v: 1, c: 1, t: 1, del: 1, _id: 1, lu: 1 }, { name: 'export_client' });
ExportResourceSchema.index({ v: 1, c: 1, u: 1, t: 1, del: 1, _id: 1, lu: 1 }, { name: 'export_user' });

/** Which resources of one type an export covers (tenant scope aside). */
export interface TypeSelection {
  v: FhirVersion;
  t: string;
  since: Date | null;
  transactionTime: Date;
  /** Group export: only these patients' compartments. */
  compartment?: { patientIds: readonly string[]; params: readonly string[] };
}

/** One NDJSON file: keys in (from, to]; null = open end. */
export interface KeyRange {
  from: string | null;
  to: string | null;
  count: number;
}

@Injectable()
export class ExportResourcesRepository {
  private readonly collection: Collection<StoredResourceDoc>;

  constructor(@InjectModel(EXPORT_RESOURCE_MODEL) private readonly model: Model<StoredResourceDoc>) {
    // The driver's collection, typed: lean reads of the stored JSON without Mongoose hydration.
    this.collection = model.collection as unknown as Collection<StoredResourceDoc>;
  }

  private selectionFilter(ctx: TenantContext, s: TypeSelection): Filter<StoredResourceDoc> {
    const lu = s.since ? { $gt: s.since, $lte: s.transactionTime } : { $lte: s.transactionTime };
    const filter: Filter<StoredResourceDoc> = { v: s.v, ...tenantFilter(ctx), t: s.t, del: false, lu };
    if (s.compartment) {
      const { patientIds, params } = s.compartment;
      if (s.t === 'Patient') filter.id = { $in: [...patientIds] };
      else
        filter['idx.ref' as 'id'] = {
          $in: params.flatMap((p) => patientIds.map((id) => `${p}|Patient/${id}`)),
        };
    }
    return filter;
  }

  /** Resource types the tenant holds live resources of (an index scan, no document read on MongoDB). */
  async typesWithData(ctx: TenantContext, v: FhirVersion): Promise<string[]> {
    const types = await this.collection.distinct('t', { v, ...tenantFilter(ctx), del: false });
    return types.sort();
  }

  /**
   * Splits the selection into files of at most `perFile` resources, reading keys only: one count,
   * then one covered index query per boundary (skip on the index, run by the engine).
   */
  async keyRanges(
    ctx: TenantContext,
    s: TypeSelection,
    perFile: number,
    signal?: AbortSignal,
  ): Promise<KeyRange[]> {
    signal?.throwIfAborted();
    const filter = this.selectionFilter(ctx, s);
    const total = await this.collection.countDocuments(filter);
    if (total === 0) return [];
    const ranges: KeyRange[] = [];
    let from: string | null = null;
    let remaining = total;
    while (remaining > perFile) {
      signal?.throwIfAborted();
      const boundary = await this.collection
        .find(from === null ? filter : { ...filter, _id: { $gt: from } }, { projection: { _id: 1 } })
        .sort({ _id: 1 })
        .skip(perFile - 1)
        .limit(1)
        .next();
      if (!boundary) break; // resources went away meanwhile: the rest fits in the last file
      ranges.push({ from, to: boundary._id, count: perFile });
      from = boundary._id;
      remaining -= perFile;
    }
    ranges.push({ from, to: null, count: remaining });
    return ranges;
  }

  /** The stored JSON of every resource of one file, in key order; the caller closes the cursor. */
  openFileCursor(
    ctx: TenantContext,
    s: TypeSelection,
    range: Pick<KeyRange, 'from' | 'to'>,
  ): FindCursor<Pick<StoredResourceDoc, 'json'>> {
    const keyBounds: { $gt?: string; $lte?: string } = {};
    if (range.from !== null) keyBounds.$gt = range.from;
    if (range.to !== null) keyBounds.$lte = range.to;
    const filter = this.selectionFilter(ctx, s);
    const bounded = Object.keys(keyBounds).length > 0 ? { ...filter, _id: keyBounds } : filter;
    return (
      this.collection
        .find(bounded, { projection: { _id: 0, json: 1 }, ...LONG_CURSOR })
        .sort({ _id: 1 })
        // Small batches: a download holds one batch of stored JSON at a time (a few hundred KB),
        // so N parallel downloads do not grow the server by N × megabytes.
        .batchSize(200)
    );
  }

  /** The current live Group `id` of the tenant, or null. */
  async findGroup(
    ctx: TenantContext,
    v: FhirVersion,
    id: string,
  ): Promise<{ vid: number; json: string } | null> {
    const doc = await this.collection.findOne(
      { v, ...tenantFilter(ctx), t: 'Group', id, del: false },
      { projection: { vid: 1, json: 1 } },
    );
    return doc && typeof doc.json === 'string' ? { vid: doc.vid, json: doc.json } : null;
  }
}
