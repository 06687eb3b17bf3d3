import { Injectable } from '@nestjs/common';
import { InjectModel } from '@nestjs/mongoose';
import { Model, Schema } from 'mongoose';
import type { Collection, Filter } from 'mongodb';
import { resourceKey, type FhirVersion } from '@app/fhir';
import { LONG_CURSOR } from '../../database/ensure-indexes';
import { TenantContext, tenantFilter } from '../../tenancy/tenant-context';
import type { LineSource } from './ndjson-response';
import { storedJsonBytes } from './stored-json-bytes';

/**
 * Read-only view of the `resources` collection (docs/storage.md) for export: counts, file
 * boundaries and file pages, all in `_id` order within the tenant's type.
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
// No index of its own: every export query bounds `_id` to the tenant's type (`${v}|${c}|${t}|…`),
// so a client-wide export walks the `_id` index in key order and a user's the store's
// {v, c, u, t, _id} index. Every further index would cost each write of the store.

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

/**
 * The `_id` range of one file: keys of this client's resources of the type (the key's prefix), after
 * `from` and up to `to` when given. The prefix bound lets the engine walk the `_id` index.
 */
function keyBounds(
  ctx: TenantContext,
  s: TypeSelection,
  from: string | null,
  to: string | null,
): { $gt?: string; $gte?: string; $lte?: string; $lt?: string } {
  const prefix = resourceKey(s.v, ctx.clientId, s.t, '');
  // '|' + 1 = '}': every key of the type sorts below it
  const end = `${prefix.slice(0, -1)}}`;
  return {
    ...(from === null ? { $gte: prefix } : { $gt: from }),
    ...(to === null ? { $lt: end } : { $lte: to }),
  };
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
   * Splits the selection into files of at most `perFile` resources in one pass over its keys, in
   * key order (`_id` only). One pass, not a count plus one `skip` query per boundary: an engine
   * that sorts the matches (DocumentDB does, after fetching them) would sort them once per file.
   */
  async keyRanges(
    ctx: TenantContext,
    s: TypeSelection,
    perFile: number,
    signal?: AbortSignal,
  ): Promise<KeyRange[]> {
    signal?.throwIfAborted();
    const cursor = this.collection
      .find(
        { ...this.selectionFilter(ctx, s), _id: keyBounds(ctx, s, null, null) },
        // a pass over every key of the type: a deadline per batch, not for the whole pass
        { projection: { _id: 1 }, ...LONG_CURSOR },
      )
      .sort({ _id: 1 })
      .batchSize(5000);
    const ranges: KeyRange[] = [];
    let from: string | null = null;
    let inFile = 0;
    try {
      for await (const doc of cursor) {
        inFile += 1;
        if (inFile === perFile) {
          signal?.throwIfAborted();
          ranges.push({ from, to: doc._id, count: inFile });
          from = doc._id;
          inFile = 0;
        }
      }
    } finally {
      await cursor.close();
    }
    if (inFile > 0) ranges.push({ from, to: null, count: inFile });
    return ranges;
  }

  /**
   * The stored JSON of every resource of one file, in key order, as the UTF-8 bytes stored (raw
   * BSON: no decoding into strings and encoding back); the caller closes the source.
   */
  openFileLines(ctx: TenantContext, s: TypeSelection, range: Pick<KeyRange, 'from' | 'to'>): LineSource {
    const filter = this.selectionFilter(ctx, s);
    const bounded = { ...filter, _id: keyBounds(ctx, s, range.from, range.to) };
    const cursor = this.collection
      .find(bounded, { projection: { _id: 0, json: 1 }, raw: true, ...LONG_CURSOR })
      .sort({ _id: 1 })
      // A download holds one batch of stored JSON at a time (about a megabyte), so N parallel
      // downloads do not grow the server by N × tens of megabytes.
      .batchSize(400);
    return {
      async *[Symbol.asyncIterator]() {
        for await (const doc of cursor) yield storedJsonBytes(doc as unknown as Uint8Array);
      },
      close: () => cursor.close(),
    };
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
