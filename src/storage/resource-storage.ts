import { Inject, Injectable, OnModuleInit } from '@nestjs/common';
import { InjectConnection } from '@nestjs/mongoose';
import type { Connection, mongo } from 'mongoose';
import { SETTINGS } from '../config/config.module';
import type { Settings } from '../config/settings';
import { ensureIndexes } from '../database/ensure-indexes';
import type { TenantContext } from '../tenancy/tenant-context';
import { HISTORY_COLLECTION, type HistoryDoc, RESOURCES_COLLECTION, type ResourceDoc } from './documents';
import { probeIndexOrder } from './index-order';
import { bringStoreLayoutUpToDate } from './store-layout';
import { HISTORY_INDEXES, resourceIndexes, RETIRED_HISTORY_INDEXES } from './indexes';
import { retiredIndexNames } from './search/search-indexes';
import { historyCondition, readCondition } from './smart-access';
import { ScopedCollection } from './tenant-scope';

/** A tenant's view of the resource collections: every filter carries its tenant keys. */
export interface TenantStore {
  readonly ctx: TenantContext;
  readonly resources: ScopedCollection<ResourceDoc>;
  readonly history: ScopedCollection<HistoryDoc>;
}

/**
 * Every tenant's documents at once, for operator work that is never behind an HTTP route (the
 * `store check` and `store reindex` scans of the CLI). Named so that its uses are easy to find.
 */
export interface UnscopedStore {
  readonly resources: mongo.Collection<ResourceDoc>;
  readonly history: mongo.Collection<HistoryDoc>;
}

/**
 * The owner of the resource collections (docs/storage.md): their names, document types and
 * indexes. `scoped(ctx)` is the only way to a tenant's documents.
 */
@Injectable()
export class ResourceStorage implements OnModuleInit {
  private inOrder = false;

  constructor(
    @InjectConnection() private readonly connection: Connection,
    @Inject(SETTINGS) private readonly settings: Pick<Settings, 'fullText' | 'urls'>,
  ) {}

  /** The driver's collection objects, made once per database handle (`db.collection` builds one per call). */
  private collections?: {
    db: mongo.Db;
    resources: mongo.Collection<ResourceDoc>;
    history: mongo.Collection<HistoryDoc>;
  };

  private get open(): NonNullable<ResourceStorage['collections']> {
    const db = this.connection.db!;
    if (this.collections?.db !== db) {
      this.collections = {
        db,
        resources: db.collection<ResourceDoc>(RESOURCES_COLLECTION),
        history: db.collection<HistoryDoc>(HISTORY_COLLECTION),
      };
    }
    return this.collections;
  }

  private get resources(): mongo.Collection<ResourceDoc> {
    return this.open.resources;
  }

  private get history(): mongo.Collection<HistoryDoc> {
    return this.open.history;
  }

  /** The tenant's documents; reads see only what its SMART scopes allow (smart-access.ts). */
  scoped(ctx: TenantContext): TenantStore {
    return {
      ctx,
      resources: new ScopedCollection(this.resources, ctx, (version) => readCondition(ctx, version)),
      history: new ScopedCollection(this.history, ctx, () => historyCondition(ctx)),
    };
  }

  /**
   * The tenant's documents whatever its SMART scopes allow to read: for writers only, which must
   * find the resource they would replace (to answer 409, or to refuse it with 403 when the scopes
   * do not allow writing it: write-protocol.ts), never to answer what they found.
   */
  scopedForWriter(ctx: TenantContext): TenantStore {
    return {
      ctx,
      resources: new ScopedCollection(this.resources, ctx),
      history: new ScopedCollection(this.history, ctx),
    };
  }

  /**
   * Whether the engine reads the composite indexes in key order (index-order.ts, probed at
   * start-up): a sorted page served by an index then stops after its rows.
   */
  get readsIndexesInOrder(): boolean {
    return this.inOrder;
  }

  unscoped(): UnscopedStore {
    return { resources: this.resources, history: this.history };
  }

  /** Indexes are created at start-up, before the first request: no query may run without its index. */
  async onModuleInit(): Promise<void> {
    const indexes = resourceIndexes(this.settings.fullText);
    await dropRedefined(this.resources, indexes);
    await ensureIndexes(this.resources, indexes);
    await ensureIndexes(this.history, HISTORY_INDEXES);
    // Every index costs each write: those of an earlier layout (search entries, history pages), or
    // of full text when it is off, go (`store reindex` rebuilds the entries of stored resources in
    // the current layout).
    await dropPresent(this.resources, retiredIndexNames(this.settings.fullText));
    await dropPresent(this.history, RETIRED_HISTORY_INDEXES);
    // search entries an earlier release did not write (one stored form of a local reference, the
    // Patient compartment entries) are added to the documents it wrote
    await bringStoreLayoutUpToDate(this.connection.db!, this.resources, this.settings);
    this.inOrder = await probeIndexOrder(this.resources);
  }
}

/**
 * Drops the indexes whose name the list declares with another key: an earlier definition of that
 * index (e.g. the references before they held the lastUpdated order), built again by `ensureIndexes`.
 */
async function dropRedefined(
  collection: mongo.Collection<any>,
  declared: readonly mongo.IndexDescription[],
): Promise<void> {
  const keyOf = new Map(declared.map((index) => [index.name, JSON.stringify(index.key)]));
  // a new store has no collection yet: nothing to drop
  const existing = await collection.indexes().catch(() => [] as mongo.IndexDescriptionInfo[]);
  for (const index of existing) {
    const key = keyOf.get(index.name);
    if (key !== undefined && key !== JSON.stringify(index.key)) await collection.dropIndex(index.name!);
  }
}

/** Drops those of `names` the collection has. */
async function dropPresent(collection: mongo.Collection<any>, names: readonly string[]): Promise<void> {
  const present = new Set((await collection.indexes()).map((index) => index.name));
  for (const name of names) if (present.has(name)) await collection.dropIndex(name);
}
