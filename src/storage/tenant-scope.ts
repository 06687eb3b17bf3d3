import type { mongo } from 'mongoose';
import { aggregateInOneReply } from '../database/one-reply-aggregate';
import { findOneByCommand } from '../database/point-read';
import type { TenantContext } from '../tenancy/tenant-context';
import { isDuplicateKey } from './duplicate-key';

// The driver types of the driver Mongoose runs (it may differ from a top-level `mongodb`).
type Collection<T extends mongo.Document> = mongo.Collection<T>;
export type Filter<T> = mongo.Filter<T>;

declare const TENANT_KEYS: unique symbol;
declare const TENANT_KEY: unique symbol;

/** A tenant key's value as the scope writes it: no other code can make one (the symbol is not exported). */
type TenantKey<V> = V & { readonly [TENANT_KEY]: true };

/**
 * A filter that carries the tenant keys of one context. Only `ScopedCollection.where` builds one:
 * the brand and the tenant keys' types are type-only symbols, so a hand-written filter (`{}`,
 * `{ _id }`, `{ c: 'other' }`) does not type-check where a `ScopedFilter` is asked for (the
 * enforcement of Novu's `BaseRepository<…, TEnforcement>`, made stricter by the brand). A scoped
 * filter spread into a larger object with further conditions stays scoped
 * (`{ ...scope.where(a), del: false }`), but one that sets a tenant key again does not compile
 * (`{ ...scope.where(a), c: other }`: a plain string is not a tenant key). At runtime the value is
 * frozen, and the collection writes its own tenant keys over every filter it sends, so even a
 * filter forced past the compiler cannot reach another tenant's documents.
 */
export type ScopedFilter<T> = Filter<T> & {
  readonly c: TenantKey<string>;
  readonly u?: TenantKey<number>;
  readonly [TENANT_KEYS]: true;
};

/** The conditions of a scoped filter: anything but the tenant keys, which the scope sets. */
export type Conditions<T> = Filter<T> & { c?: never; u?: never };

/**
 * A document of a tenant-owned collection: `c` its client; `u` its user where the collection holds
 * per-user data (resources, history, export jobs), the owner as data where it is client-scoped.
 */
export type TenantDocument = mongo.Document & { c: string; u?: number | null };

/**
 * Whose documents a collection is scoped to: one client, and within it one user or (`userId`
 * null) all of them. A `TenantContext` is one; `clientScope` makes the one of client-owned records.
 * `startDatabaseCommand`, when set, is told of every command sent and of its reply.
 */
export type ScopeOwner = Pick<TenantContext, 'clientId' | 'userId' | 'startDatabaseCommand'>;

/**
 * The scope of a tenant's records outside the resource collections (users, grants, conditional
 * keys, id claims, export jobs): the client key, and `userId` when the records are one user's.
 * Not charged: these are look-ups of a caller's own records by key, and the database share
 * charges what reads of resources cost.
 */
export function clientScope(scope: { readonly clientId: string }, userId: number | null = null): ScopeOwner {
  return { clientId: scope.clientId, userId };
}

/**
 * Named widening: the whole client of a user's context. Allowed where a user's write must see
 * what other users of its client hold, never to answer what it finds: a resource id is unique
 * within a client, so a writer answers 409 for another user's id (docs/storage.md), and the
 * history rows of a write are looked up and replaced by key across the client (their keys name
 * the client, not the user).
 */
export function clientWide(ctx: TenantContext): TenantContext {
  return ctx.userId === null ? ctx : { ...ctx, userId: null };
}

/**
 * Named re-aim: the context of `owner`, a user of the same client who owns a record: the user an id
 * claim names (resource-ids.repository.ts), to route a look-up of that key to its owner's documents
 * (on a sharded store: the owner's shard, docs/scaling.md) for a writer's 409 check or a stale
 * claim's takeover; or the user (null: the whole client) of an export job or file link the caller
 * was allowed to find, or of a bundle's writes its Provenance records. The client never changes.
 */
export function asOwner(ctx: TenantContext, owner: number | null): TenantContext {
  return ctx.userId === owner ? ctx : { ...ctx, userId: owner };
}

/** The tenant part of every filter: the only place that builds it. */
function tenantFilter(owner: ScopeOwner): { c: string; u?: number } {
  return owner.userId === null ? { c: owner.clientId } : { c: owner.clientId, u: owner.userId };
}

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
 * `toArray`) is timed and charged to the caller (TenantContext.startDatabaseCommand), so a client whose
 * queries are slow but answer little pays for the lanes it holds (docs/security.md "Database time").
 */
export class ScopedCollection<T extends TenantDocument> {
  /** The tenant part of every filter: `{c}` or `{c, u}`. */
  private readonly tenant: { c: string; u?: number };

  constructor(
    private readonly collection: Collection<T>,
    private readonly ctx: ScopeOwner,
    private readonly restriction?: ReadRestriction,
  ) {
    this.tenant = tenantFilter(ctx);
  }

  /**
   * `filter` as it is sent: the tenant keys written over it again (they keep their place), so a
   * filter whose keys were changed after `where` built it (a cast, or one of another scope) still
   * reaches this tenant's documents only.
   */
  private sent(filter: ScopedFilter<T>): Filter<T> {
    return { ...filter, ...this.tenant };
  }

  /** `filter` and the read restriction, as one more `$and` member (the filter's own fields keep their order). */
  private readable(filter: ScopedFilter<T>): Filter<T> {
    const sent = this.sent(filter);
    const version = (filter as { v?: unknown }).v;
    const condition = this.restriction?.(typeof version === 'string' ? version : undefined);
    if (!condition) return sent;
    return { ...sent, $and: [...(filter.$and ?? []), condition] } as Filter<T>;
  }

  /**
   * The filter this collection accepts: `conditions`, then the tenant keys, then `after`. The order
   * of the fields is the order in which DocumentDB tests the conditions its index does not bound
   * (docs/storage.md "Where the time goes"); MongoDB does not care. The tenant keys win over
   * anything the conditions say. The value is frozen: further conditions make a new object.
   */
  where(conditions: Conditions<T> = {}, after?: Conditions<T>): ScopedFilter<T> {
    const tenant = this.tenant;
    // spread again last: a key keeps its first position, and the tenant's values win at runtime too
    const filter = after ? { ...conditions, ...tenant, ...after, ...tenant } : { ...conditions, ...tenant };
    return Object.freeze(filter) as unknown as ScopedFilter<T>;
  }

  findOne(filter: ScopedFilter<T>, options?: mongo.FindOptions): Promise<T | null> {
    return this.timed(findOneByCommand(this.collection, this.readable(filter), options));
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

  /**
   * The rows of a pipeline whose first stage is the scoped `$match` and whose rows are at most
   * `rows` (its `$limit`, a `$facet`'s one row): in one reply, without a cursor
   * (database/one-reply-aggregate.ts). The read of every request path that knows its row count.
   */
  aggregateRows<R extends mongo.Document>(
    match: ScopedFilter<T>,
    stages: readonly object[],
    rows: number,
    options: Pick<mongo.AggregateOptions, 'hint' | 'enableUtf8Validation'> = {},
  ): Promise<R[]> {
    const collection = this.collection as unknown as Collection<mongo.Document>;
    return this.timed(
      aggregateInOneReply<R>(collection, [{ $match: this.readable(match) }, ...stages], options, rows),
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
    return this.timed(this.collection.updateOne(this.sent(filter), update, options));
  }

  updateMany(filter: ScopedFilter<T>, update: mongo.UpdateFilter<T>): Promise<mongo.UpdateResult> {
    return this.timed(this.collection.updateMany(this.sent(filter), update));
  }

  /**
   * One document updated in one conditional write, returned as it was before (or, with
   * `returnDocument: 'after'`, after); null when none matched.
   */
  findOneAndUpdate(
    filter: ScopedFilter<T>,
    update: mongo.UpdateFilter<T>,
    options: { returnDocument?: 'before' | 'after' } = {},
  ): Promise<T | null> {
    return this.timed(
      this.collection.findOneAndUpdate(this.sent(filter), update, {
        ...options,
        includeResultMetadata: false,
      }),
    ) as Promise<T | null>;
  }

  replaceOne(filter: ScopedFilter<T>, doc: T): Promise<mongo.UpdateResult> {
    this.checkOwned([doc]);
    return this.timed(this.collection.replaceOne(this.sent(filter), doc));
  }

  deleteOne(filter: ScopedFilter<T>): Promise<mongo.DeleteResult> {
    return this.timed(this.collection.deleteOne(this.sent(filter)));
  }

  deleteMany(filter: ScopedFilter<T>): Promise<mongo.DeleteResult> {
    return this.timed(this.collection.deleteMany(this.sent(filter)));
  }

  /** Several scoped deletes in one round trip (unordered); returns how many documents went. */
  async deleteEach(filters: ReadonlyArray<ScopedFilter<T>>): Promise<number> {
    if (filters.length === 0) return 0;
    const result = await this.timed(
      this.collection.bulkWrite(
        filters.map((filter) => ({ deleteMany: { filter: this.sent(filter) } })),
        { ordered: false },
      ),
    );
    return result.deletedCount;
  }

  /** Inserts one document of this tenant; a duplicate `_id` (or other unique key) throws E11000. */
  insertOne(doc: T): Promise<mongo.InsertOneResult<T>> {
    this.checkOwned([doc]);
    return this.timed(this.collection.insertOne(doc as mongo.OptionalUnlessRequiredId<T>));
  }

  /**
   * Inserts documents of this tenant, unordered; returns the indexes of those whose `_id` existed
   * already (every other one was inserted).
   */
  insertIgnoringDuplicates(docs: readonly T[]): Promise<number[]> {
    this.checkOwned(docs);
    return this.timed(insertIgnoringDuplicates(this.collection, docs));
  }

  /**
   * `insertOrderedUntilDuplicate` on this collection: the documents in order up to the first whose
   * `_id` exists; returns that document's index (none after it was inserted), or null when all were.
   */
  insertOrderedUntilDuplicate(docs: readonly T[]): Promise<number | null> {
    this.checkOwned(docs);
    return this.timed(insertOrderedUntilDuplicate(this.collection, docs));
  }

  /** `work`, its time charged to the caller once it settles (failed commands took database time too). */
  private timed<R>(work: Promise<R>): Promise<R> {
    const ended = this.ctx.startDatabaseCommand?.();
    return ended ? work.finally(ended) : work;
  }

  /**
   * `cursor`, its `toArray` timed (how every request path reads a cursor; streamed exports iterate
   * it outside the lanes, paced by the client's socket, and are not charged for that wait).
   */
  private timedCursor<C extends { toArray(): Promise<unknown[]> }>(cursor: C): C {
    if (!this.ctx.startDatabaseCommand) return cursor;
    const toArray = cursor.toArray.bind(cursor) as C['toArray'];
    return Object.assign(cursor, { toArray: () => this.timed(toArray()) });
  }

  private checkOwned(docs: readonly T[]): void {
    const { clientId, userId } = this.ctx;
    for (const doc of docs) {
      if (doc.c !== clientId || (userId !== null && doc.u !== userId)) {
        throw new Error(`document ${String(doc._id)} does not belong to the tenant it is written for`);
      }
    }
  }
}

/** Indexes of the documents whose `_id` existed already; every other one was inserted. */
export async function insertIgnoringDuplicates<T extends mongo.Document>(
  collection: Collection<T>,
  docs: readonly T[],
): Promise<number[]> {
  if (docs.length === 0) return [];
  try {
    await collection.insertMany([...docs] as never[], { ordered: false });
    return [];
  } catch (error) {
    const list = writeErrorsOf(error);
    if (list.length === 0 || list.some((e) => !isDuplicateKey(e))) throw error;
    return list.map((e) => e.index);
  }
}

/** The write errors of a failed bulk insert (none when it failed otherwise). */
function writeErrorsOf(error: unknown): readonly mongo.WriteError[] {
  const writeErrors = (error as mongo.MongoBulkWriteError).writeErrors as
    mongo.WriteError | readonly mongo.WriteError[] | undefined;
  if (writeErrors === undefined) return [];
  return Array.isArray(writeErrors)
    ? (writeErrors as readonly mongo.WriteError[])
    : [writeErrors as mongo.WriteError];
}

/**
 * An ordered insert: the engine stops at the first document whose `_id` exists, so every document
 * before it is inserted and none after it. Returns that document's index, or null when all went in.
 */
export async function insertOrderedUntilDuplicate<T extends mongo.Document>(
  collection: Collection<T>,
  docs: readonly T[],
): Promise<number | null> {
  if (docs.length === 0) return null;
  try {
    await collection.insertMany([...docs] as never[], { ordered: true });
    return null;
  } catch (error) {
    const list = writeErrorsOf(error);
    if (list.length !== 1 || !isDuplicateKey(list[0])) throw error;
    return list[0].index;
  }
}
