import { Injectable } from '@nestjs/common';
import {
  ANY_PATIENT_COMPARTMENT_PATTERN,
  patientCompartmentKey,
  resourceKey,
  type FhirVersion,
} from '@app/fhir';
import { LONG_CURSOR } from '../../database/ensure-indexes';
import type { TenantContext } from '../../tenancy/tenant-context';
import type { ResourceDoc } from '../../storage/documents';
import { keyOrderIndex, typeKeySpace } from '../../storage/key-space';
import { ResourceStorage } from '../../storage/resource-storage';
import type { Conditions, ScopedCollection, ScopedFilter } from '../../storage/tenant-scope';
import type { LineSource } from './ndjson-response';
import { storedJsonBytes } from './stored-json-bytes';

// Export reads the store's `resources` collection (src/storage) and declares no index of its own:
// file pages bound `_id` to the tenant's type (`${v}|${c}|${t}|…`), so they walk the `_id` index
// or a user's {v, c, u, t, _id}; the plan's prefix counts read the store's {v, c, t, lu, id}
// (client-wide) or {v, c, u, t, _id}. Every further index would cost each write.

/**
 * Deadline of one prefix count: it reads every matching resource of the tenant in one command (about
 * 3 µs per resource measured on DocumentDB), so DB_TIMEOUT_MS, a request's deadline, is too short
 * for millions of resources; a hung database still ends it.
 */
const PLAN_COUNT_DEADLINE_MS = 10 * 60_000;

/** The live resources an export covers, tenant scope aside: not deleted, changed in (since, transactionTime]. */
export interface LiveSelection {
  v: FhirVersion;
  since: Date | null;
  transactionTime: Date;
}

/** Which resources of one type an export covers (tenant scope aside). */
export interface TypeSelection extends LiveSelection {
  t: string;
  /**
   * Patient and Group exports: only resources in a Patient compartment — these patients' (a Group,
   * the `patient` parameter) or, with `'any'`, any Patient's (a Patient export of the whole scope).
   */
  compartment?: { patientIds: readonly string[] | 'any' };
}

/** Several types at once (null = every type): a plan without a compartment. */
export interface TypesSelection extends LiveSelection {
  types: readonly string[] | null;
}

/**
 * Key bounds of one file. `half-open`: keys in [from, to) (plans cut at key
 * prefixes); otherwise (from, to] (links and stored jobs of earlier plans, cut at keys). null = open end.
 */
export interface KeyRange {
  from: string | null;
  to: string | null;
  bounds?: 'half-open';
}

/** Matching resources per key prefix of one type, in key order (the prefix: the id's first characters). */
export interface PrefixCount {
  t: string;
  /** The key where the prefix starts: `${v}|${c}|${t}|${first characters of the id}`. */
  start: string;
  count: number;
}

/**
 * The `_id` range of one file: keys of this client's resources of the type (the key's prefix) within
 * the file's bounds. The prefix bound lets the engine walk the `_id` index.
 */
function keyBounds(
  ctx: TenantContext,
  s: TypeSelection,
  range: KeyRange,
): { $gt?: string; $gte?: string; $lte?: string; $lt?: string } {
  const { prefix, end } = typeKeySpace(ctx, s.v, s.t);
  const { from, to } = range;
  if (range.bounds === 'half-open') return { $gte: from ?? prefix, $lt: to ?? end };
  return {
    ...(from === null ? { $gte: prefix } : { $gt: from }),
    ...(to === null ? { $lt: end } : { $lte: to }),
  };
}

/** Where a client-wide prefix count is cut in two: the middle of the hex digits of the server's UUID ids. */
const ID_SPLIT = '8';

/** Two lists of prefix counts in key order, each type's rows of `first` before those of `second`. */
function mergeByType(first: readonly PrefixCount[], second: readonly PrefixCount[]): PrefixCount[] {
  const types = [...new Set([...first, ...second].map((row) => row.t))].sort();
  return types.flatMap((t) => [
    ...first.filter((row) => row.t === t),
    ...second.filter((row) => row.t === t),
  ]);
}

/**
 * A file's keys read in key order from the first row on (streamed, no sort of the file first): the
 * key-order index of the context. A compartment's files are left to the planner: their references
 * select few resources of a large type, which the reference index finds and sorts.
 */
function inKeyOrder(ctx: TenantContext, s: TypeSelection): { hint?: string } {
  return s.compartment ? {} : { hint: keyOrderIndex(ctx) };
}

function isTypeSelection(s: TypeSelection | TypesSelection): s is TypeSelection {
  return 't' in s;
}

@Injectable()
export class ExportResourcesRepository {
  constructor(private readonly storage: ResourceStorage) {}

  private resources(ctx: TenantContext): ScopedCollection<ResourceDoc> {
    return this.storage.scoped(ctx).resources;
  }

  /** The selection, tenant first (every export filter is bounded by the tenant's index prefix). */
  private selectionFilter(
    ctx: TenantContext,
    s: TypeSelection | TypesSelection,
    also: Conditions<ResourceDoc> = {},
  ): ScopedFilter<ResourceDoc> {
    const lu = s.since ? { $gt: s.since, $lte: s.transactionTime } : { $lte: s.transactionTime };
    const filter: Conditions<ResourceDoc> = { del: false, lu };
    if (!isTypeSelection(s)) {
      if (s.types) filter.t = { $in: [...s.types] };
    } else {
      filter.t = s.t;
      if (s.compartment) {
        // a resource's compartments are its entries `*patient|Patient/x` (patient-compartment-key.ts)
        const { patientIds } = s.compartment;
        if (patientIds === 'any') {
          if (s.t !== 'Patient') filter['idx.ref' as 'id'] = { $regex: ANY_PATIENT_COMPARTMENT_PATTERN };
        } else if (s.t === 'Patient') filter.id = { $in: [...patientIds] };
        else filter['idx.ref' as 'id'] = { $in: patientIds.map(patientCompartmentKey) };
      }
    }
    return this.resources(ctx).where({ v: s.v }, { ...filter, ...also });
  }

  /**
   * How many matching resources each key prefix holds — the first `length` characters of the id —
   * per type, in key order; aggregations over the index range of the selection, no key sent back.
   * `within`: only keys of one type in [from, to) (a prefix looked at closer).
   *
   * A client-wide count runs as two aggregations side by side, ids below and from ID_SPLIT: the
   * engine runs each on its own core (DocumentDB: one PostgreSQL backend per connection). Its index
   * ({v, c, t, lu, id}) holds the id, so each half reads only its own resources (measured 1.4× at
   * 115k on a busy 2-core machine); a user's index ({v, c, u, t, _id}) does not, so a user's count is one.
   */
  async prefixCounts(
    ctx: TenantContext,
    s: TypeSelection | TypesSelection,
    length: number,
    within?: { from: string; to: string },
  ): Promise<PrefixCount[]> {
    const match = this.selectionFilter(ctx, s, within ? { _id: { $gte: within.from, $lt: within.to } } : {});
    if (within || isTypeSelection(s) || ctx.userId !== null)
      return this.countPrefixes(ctx, s.v, match, length);
    const [below, from] = await Promise.all([
      this.countPrefixes(ctx, s.v, { ...match, id: { $lt: ID_SPLIT } }, length),
      this.countPrefixes(ctx, s.v, { ...match, id: { $gte: ID_SPLIT } }, length),
    ]);
    // every prefix of a type below the split sorts before every one from it
    return mergeByType(below, from);
  }

  private async countPrefixes(
    ctx: TenantContext,
    v: FhirVersion,
    match: ScopedFilter<ResourceDoc>,
    length: number,
  ): Promise<PrefixCount[]> {
    const rows = await this.resources(ctx)
      .aggregate<{ _id: { t: string; p: string }; n: number }>(
        match,
        [
          { $group: { _id: { t: '$t', p: { $substrCP: ['$id', 0, length] } }, n: { $sum: 1 } } },
          // the engine's own string order is the key order the files are read in
          { $sort: { '_id.t': 1, '_id.p': 1 } },
        ],
        // one pass over every matching resource in one command: the plan's deadline, not a request's
        { timeoutMS: PLAN_COUNT_DEADLINE_MS },
      )
      .toArray();
    return rows.map((row) => ({
      t: row._id.t,
      start: resourceKey(v, ctx.clientId, row._id.t, row._id.p),
      count: row.n,
    }));
  }

  /**
   * Cuts keys [from, to) of one type into runs of `perFile` matching resources by reading the keys
   * in order (`_id` only): for a prefix too large for one file even at a finer prefix (e.g. ids that
   * share a long common beginning). Each run starts at its first key; the first at `from`.
   */
  async keyRuns(
    ctx: TenantContext,
    s: TypeSelection,
    within: { from: string; to: string },
    perFile: number,
    signal?: AbortSignal,
  ): Promise<Array<{ start: string; count: number }>> {
    signal?.throwIfAborted();
    const cursor = this.resources(ctx)
      .find(this.selectionFilter(ctx, s, { _id: { $gte: within.from, $lt: within.to } }), {
        projection: { _id: 1 },
        ...inKeyOrder(ctx, s),
        ...LONG_CURSOR,
      })
      .sort({ _id: 1 })
      .batchSize(5000);
    const runs: Array<{ start: string; count: number }> = [];
    try {
      for await (const doc of cursor) {
        const last = runs[runs.length - 1];
        if (last && last.count < perFile) last.count += 1;
        else {
          signal?.throwIfAborted();
          runs.push({ start: last ? doc._id : within.from, count: 1 });
        }
      }
    } finally {
      await cursor.close();
    }
    return runs;
  }

  /**
   * The stored JSON of every resource of one file, in key order, as the UTF-8 bytes stored (raw
   * BSON: no decoding into strings and encoding back); the caller closes the source.
   */
  openFileLines(ctx: TenantContext, s: TypeSelection, range: KeyRange): LineSource {
    const bounded = this.selectionFilter(ctx, s, { _id: keyBounds(ctx, s, range) });
    const cursor = this.resources(ctx)
      .find(bounded, { projection: { _id: 0, json: 1 }, raw: true, ...inKeyOrder(ctx, s), ...LONG_CURSOR })
      .sort({ _id: 1 })
      // A download holds one batch of stored JSON at a time (about a megabyte), so N parallel
      // downloads do not grow the server by N × tens of megabytes.
      .batchSize(400);
    return {
      async *[Symbol.asyncIterator]() {
        // whole batches: hasNext() fetches the next one when the buffer is empty
        while (await cursor.hasNext()) {
          yield cursor.readBufferedDocuments().map((doc) => storedJsonBytes(doc as unknown as Uint8Array));
        }
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
    const resources = this.resources(ctx);
    const doc = await resources.findOne(resources.where({ v }, { t: 'Group', id, del: false }), {
      projection: { vid: 1, json: 1 },
    });
    return doc && typeof doc.json === 'string' ? { vid: doc.vid, json: doc.json } : null;
  }
}
