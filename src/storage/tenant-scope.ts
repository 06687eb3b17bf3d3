import { performance } from 'node:perf_hooks';
import type { mongo } from 'mongoose';
import { TenantContext, tenantFilter, type TenantFilter } from '../tenancy/tenant-context';
import { isDuplicateKey } from './duplicate-key';

// The driver types of the driver Mongoose runs (it may differ from a top-level `mongodb`).
type Collection<T extends mongo.Document> = mongo.Collection<T>;
export type Filter<T> = mongo.Filter<T>;

declare const TENANT_KEYS: unique symbol;

/**
 * A filter that carries the tenant keys of one context. Only `TenantStore.where` builds one: the
 * brand is a type-only symbol, so a hand-written filter (`{}`, `{ _id }`, `{ c: 'other' }`) does
 * not type-check where a `ScopedFilter` is asked for (the enforcement of Novu's
 * `BaseRepository<…, TEnforcement>`, made stricter by the brand). Spreading a scoped filter into a
 * larger object keeps the brand: `{ ...scope.where(a), del: false }` is still scoped.
 */
export type ScopedFilter<T> = Filter<T> & TenantFilter & { readonly [TENANT_KEYS]: true };

/** The conditions of a scoped filter: anything but the tenant keys, which the scope sets. */
export type Conditions<T> = Filter<T> & { c?: never; u?: never };

export type TenantDocument = mongo.Document & { _id: string; c: string; u: number };

/**
 * A further condition on every read of a collection, given the version the read is limited to (if
 * any): what the context's SMART scopes allow (storage/smart-access.ts). Undefined: no limit.
 */
export type ReadRestriction = (version: string | undefined) => Filter<never> | undefined;

/**
 * One collection as seen from one tenant: every read, update and delete takes a `ScopedFilter`,
 * every inserted document must belong to the tenant (checked here, so a document built from one
 * context is never written under another). Reads (find, aggregate, count, distinct) also carry the
 * `restriction`, when one is given. Options pass through to the driver unchanged.
 *
 * It is also where database time is measured: every command it sends (a cursor when read with
 * `toArray`) is timed and charged to the caller (TenantContext.chargeDatabaseMs), so a client whose
 * queries are slow but answer little pays for the lanes it holds (docs/security.md "Database time").
 */
export class ScopedCollection<T extends TenantDocument> {
  constructor(
    private readonly collection: Collection<T>,
    private readonly ctx: TenantContext,
    private readonly restriction?: ReadRestriction,
  ) {}

  /** `filter` and the read restriction, as one more `$and` member (the filter's own fields keep their order). */
  private readable(filter: ScopedFilter<T>): ScopedFilter<T> {
    const version = (filter as { v?: unknown }).v;
    const condition = this.restriction?.(typeof version === 'string' ? version : undefined);
    if (!condition) return filter;
    return { ...filter, $and: [...(filter.$and ?? []), condition as Filter<T>] };
  }

  /**
   * The filter this collection accepts: `conditions`, then the tenant keys, then `after`. The order
   * of the fields is the order in which DocumentDB tests the conditions its index does not bound
   * (docs/storage.md "Where the time goes"); MongoDB does not care. The tenant keys win over
   * anything the conditions say.
   */
  where(conditions: Conditions<T> = {}, after: Conditions<T> = {}): ScopedFilter<T> {
    const tenant = tenantFilter(this.ctx);
    // spread again last: a key keeps its first position, and the tenant's values win at runtime too
    return { ...conditions, ...tenant, ...after, ...tenant } as unknown as ScopedFilter<T>;
  }

  findOne(filter: ScopedFilter<T>, options?: mongo.FindOptions): Promise<T | null> {
    return this.timed(this.collection.findOne<T>(this.readable(filter), options ?? {}));
  }

  /**
   * A read with a limit comes in one reply (up to the engine's 16 MB a batch): one round trip,
   * and no cursor left open between replies (DocumentDB's gateway pins such a cursor to one of
   * its backends until it is read to the end).
   */
  find(filter: ScopedFilter<T>, options?: mongo.FindOptions): mongo.FindCursor<T> {
    const oneReply = options?.limit && options.batchSize === undefined ? { batchSize: options.limit } : {};
    return this.timedCursor(
      this.collection.find(this.readable(filter), { ...options, ...oneReply }) as mongo.FindCursor<T>,
    );
  }

  /** A pipeline whose first stage is the scoped `$match`. */
  aggregate<R extends mongo.Document>(
    match: ScopedFilter<T>,
    stages: readonly object[],
    options?: mongo.AggregateOptions,
  ): mongo.AggregationCursor<R> {
    return this.timedCursor(
      this.collection.aggregate<R>([{ $match: this.readable(match) }, ...stages], options),
    );
  }

  countDocuments(filter: ScopedFilter<T>, options?: mongo.CountDocumentsOptions): Promise<number> {
    return this.timed(this.collection.countDocuments(this.readable(filter), options));
  }

  distinct(field: keyof T & string, filter: ScopedFilter<T>): Promise<unknown[]> {
    return this.timed(this.collection.distinct(field, this.readable(filter)));
  }

  updateOne(
    filter: ScopedFilter<T>,
    update: mongo.UpdateFilter<T>,
    options?: mongo.UpdateOptions,
  ): Promise<mongo.UpdateResult> {
    return this.timed(this.collection.updateOne(filter, update, options));
  }

  replaceOne(filter: ScopedFilter<T>, doc: T): Promise<mongo.UpdateResult> {
    this.checkOwned([doc]);
    return this.timed(this.collection.replaceOne(filter, doc));
  }

  deleteOne(filter: ScopedFilter<T>): Promise<mongo.DeleteResult> {
    return this.timed(this.collection.deleteOne(filter));
  }

  deleteMany(filter: ScopedFilter<T>): Promise<mongo.DeleteResult> {
    return this.timed(this.collection.deleteMany(filter));
  }

  /** Several scoped deletes in one round trip (unordered); returns how many documents went. */
  async deleteEach(filters: ReadonlyArray<ScopedFilter<T>>): Promise<number> {
    if (filters.length === 0) return 0;
    const result = await this.timed(
      this.collection.bulkWrite(
        filters.map((filter) => ({ deleteMany: { filter } })),
        { ordered: false },
      ),
    );
    return result.deletedCount;
  }

  /**
   * Inserts documents of this tenant, unordered; returns the indexes of those whose `_id` existed
   * already (every other one was inserted).
   */
  insertIgnoringDuplicates(docs: readonly T[]): Promise<number[]> {
    this.checkOwned(docs);
    return this.timed(insertIgnoringDuplicates(this.collection, docs));
  }

  /** `work`, its time charged to the caller once it settles (failed commands took database time too). */
  private timed<R>(work: Promise<R>): Promise<R> {
    const charge = this.ctx.chargeDatabaseMs;
    if (!charge) return work;
    const start = performance.now();
    return work.finally(() => charge(performance.now() - start));
  }

  /**
   * `cursor`, its `toArray` timed (how every request path reads a cursor; streamed exports iterate
   * it outside the lanes, paced by the client's socket, and are not charged for that wait).
   */
  private timedCursor<C extends { toArray(): Promise<unknown[]> }>(cursor: C): C {
    if (!this.ctx.chargeDatabaseMs) return cursor;
    const toArray = cursor.toArray.bind(cursor) as C['toArray'];
    return Object.assign(cursor, { toArray: () => this.timed(toArray()) });
  }

  private checkOwned(docs: readonly T[]): void {
    const { clientId, userId } = this.ctx;
    for (const doc of docs) {
      if (doc.c !== clientId || (userId !== null && doc.u !== userId)) {
        throw new Error(`document ${doc._id} does not belong to the tenant it is written for`);
      }
    }
  }
}

/** Indexes of the documents whose `_id` existed already; every other one was inserted. */
export async function insertIgnoringDuplicates<T extends { _id: string }>(
  collection: Collection<T>,
  docs: readonly T[],
): Promise<number[]> {
  if (docs.length === 0) return [];
  try {
    await collection.insertMany([...docs] as never[], { ordered: false });
    return [];
  } catch (error) {
    const writeErrors = (error as mongo.MongoBulkWriteError).writeErrors;
    const list = Array.isArray(writeErrors) ? writeErrors : writeErrors ? [writeErrors] : [];
    if (list.length === 0 || list.some((e) => !isDuplicateKey(e))) throw error;
    return list.map((e) => e.index);
  }
}
