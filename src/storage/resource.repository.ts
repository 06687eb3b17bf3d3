import { Injectable } from '@nestjs/common';
import type { mongo } from 'mongoose';
import { historyKey, resourceKey, type FhirVersion } from '@app/fhir';
import type { TenantContext } from '../tenancy/tenant-context';
import { inlineJsonUpTo, JSON_SIZE, servedWithinBudget } from './page-budget';
import type { HistoryDoc, ResourceDoc } from './documents';
import { ResourceIdsRepository } from './resource-ids.repository';
import { ResourceStorage, type TenantStore } from './resource-storage';
import {
  asOwner,
  clientWide,
  type Conditions,
  type Filter,
  type ScopedCollection,
  type ScopedFilter,
  type TenantDocument,
} from './tenant-scope';
import { LAST_UPDATED_INDEX, USER_LAST_UPDATED_INDEX } from './indexes';
import { luBounds, newestWindowStart, type LuRange } from './search/newest-window';

/** Options of `search`: the search lib builds `filter`/`sort`; the repository adds tenant and version. */
export interface StoreSearchOptions {
  type?: string | readonly string[];
  filter?: Filter<ResourceDoc>;
  /** Field → 1 | -1, the last field unique (stable pages); default `DEFAULT_SORT`. */
  sort?: SortOrder;
  skip?: number;
  limit: number;
  /** Also count every match (Bundle.total). */
  count?: boolean;
  /** Leave `idx` out of the returned documents (default true: it is large and never served). */
  withoutIndex?: boolean;
  /** Name of the index to run on (`BuiltSearch.index`: the planner cannot tell multikey selectivity). */
  hint?: string;
}

export interface StoreSearchResult {
  docs: ResourceDoc[];
  total?: number;
}

/** A searchset page's matches (`ResourceRepository.searchPage`). */
export interface SearchPageRows {
  docs: ResourceDoc[];
  /** A match follows the page. */
  hasNext: boolean;
  /** How many matches there are from `skip` on, when the page saw the last one. */
  matchesFromSkip?: number;
}

export interface ResourceRef {
  type: string;
  id: string;
}

/** A current resource known by key, lastUpdated and JSON size only (`sizesOf`). */
export interface SizedRef {
  _id: string;
  t: string;
  id: string;
  lu: Date;
  size: number;
}

/** The fields of a `SizedRef`, its size computed by the engine (the JSON itself stays there). */
const SIZED_FIELDS = { _id: 1, t: 1, id: 1, lu: 1, size: JSON_SIZE };

type SortOrder = Readonly<Record<string, 1 | -1>>;

const WITHOUT_INDEX = { idx: 0 } as const;
/** Search order without `_sort`: newest first, then id (a total order: stable pages). */
const DEFAULT_SORT = { lu: -1, id: 1 } as const;

/** The fields of a current document that are served (all but `idx`), for inclusion projections. */
const SERVED_FIELDS = ['_id', 'v', 'c', 'u', 't', 'id', 'vid', 'lu', 'del'] as const satisfies ReadonlyArray<
  keyof ResourceDoc
>;

function withoutSize<T extends ResourceDoc>(row: T & { size?: number }): ResourceDoc {
  const { size: _size, ...doc } = row;
  return doc;
}

export interface TypeCount {
  type: string;
  count: number;
  references: string[];
}

interface TypeCountRow {
  _id: string;
  n: number;
  r?: string[][];
}

/** `$group` by type: the count, and the `idx.ref` entries matching `referencePattern` when given. */
function typeCountGroup(referencePattern: string | undefined): Record<string, unknown> {
  const group: Record<string, unknown> = { _id: '$t', n: { $sum: 1 } };
  if (referencePattern !== undefined) {
    const entries = { $ifNull: ['$idx.ref', []] };
    const matching = { $regexMatch: { input: '$$this', regex: referencePattern } };
    group.r = { $push: { $filter: { input: entries, cond: matching } } };
  }
  return group;
}

function typeCountOf(row: TypeCountRow): TypeCount {
  return { type: row._id, count: row.n, references: [...new Set((row.r ?? []).flat())] };
}

/**
 * The index a search runs on in this context: one user's search in lastUpdated order reads the
 * user's own lastUpdated index (a client-wide one would hold every user's entries, each tested for
 * `u` on its stored document).
 */
function forContext(ctx: TenantContext, hint: string | undefined): { hint?: string } {
  if (hint === undefined) return {};
  return { hint: hint === LAST_UPDATED_INDEX && ctx.userId !== null ? USER_LAST_UPDATED_INDEX : hint };
}

/**
 * Newest first on the lastUpdated index: the order a window of lastUpdated can serve (the filter
 * builder names that index only for searches bounded by nothing but `_lastUpdated`).
 */
function newestFirst(sort: SortOrder, hint: string | undefined): boolean {
  return hint === LAST_UPDATED_INDEX && Object.entries(sort)[0]?.join() === 'lu,-1';
}

/** One document by `_id` in a tenant's collection (`also`: further conditions), without its index entries. */
function findScoped<T extends TenantDocument>(
  collection: ScopedCollection<T>,
  id: string,
  also: Conditions<T> = {},
): Promise<T | null> {
  return collection.findOne(collection.where({ _id: id } as Conditions<T>, also), {
    projection: WITHOUT_INDEX,
  });
}

/** `findScoped` for many ids in one `$in` query; missing ones are left out, order of `ids` kept. */
async function byIds<T extends TenantDocument>(
  collection: ScopedCollection<T>,
  ids: readonly string[],
  also: Conditions<T> = {},
): Promise<T[]> {
  if (ids.length === 0) return [];
  const docs = await collection
    .find(collection.where({ _id: { $in: [...ids] } } as Conditions<T>, also), { projection: WITHOUT_INDEX })
    .toArray();
  const byId = new Map(docs.map((d) => [d._id, d]));
  return ids.map((id) => byId.get(id)).filter((d): d is T => d !== undefined);
}

/**
 * Current documents and history rows of the FHIR resources (docs/storage.md): reads by key and by
 * search, and the write protocol. Every method takes the `TenantContext` first and works on
 * `ResourceStorage.scoped(ctx)`, whose filters carry the tenant keys by construction.
 * Raw driver collections: reads return the stored JSON text untouched (the hot path).
 */
@Injectable()
export class ResourceRepository {
  constructor(
    private readonly storage: ResourceStorage,
    private readonly ids: ResourceIdsRepository,
  ) {}

  private scoped(ctx: TenantContext): TenantStore {
    return this.storage.scoped(ctx);
  }

  key(ctx: TenantContext, version: FhirVersion, type: string, id: string): string {
    return resourceKey(version, ctx.clientId, type, id);
  }

  // ---- reads --------------------------------------------------------------------------------

  /** The current document of one resource in the caller's scope (tombstones included), or null. */
  findCurrent(ctx: TenantContext, key: string): Promise<ResourceDoc | null> {
    return findScoped(this.scoped(ctx).resources, key);
  }

  /**
   * The current document whoever of the client owns it, whatever the SMART scopes allow to read:
   * writers decide 409 on it, and refuse with 403 what the scopes do not allow them to replace
   * (ResourceWriter); never served. Routed by owner (docs/scaling.md): the caller's own document,
   * else the owner its id claim names; no claim, no resource. A claim of the caller's without a
   * document of the caller's (its own create in flight, or an id written before claims existed, on
   * an unsharded database) asks the whole client.
   */
  async findCurrentInClient(ctx: TenantContext, key: string): Promise<ResourceDoc | null> {
    const lookup = (scope: TenantContext) => findScoped(this.storage.scopedForWriter(scope).resources, key);
    if (ctx.userId === null) return lookup(ctx);
    const own = await lookup(ctx);
    if (own) return own;
    const owner = (await this.ids.owners([key])).get(key);
    if (owner === undefined) return null;
    return lookup(owner === ctx.userId ? clientWide(ctx) : asOwner(ctx, owner));
  }

  /**
   * Current documents (tombstones too) of many keys within the context: a user's credential reads
   * the user's own documents only, which on a sharded store is one shard (docs/scaling.md).
   */
  async findManyCurrent(ctx: TenantContext, keys: readonly string[]): Promise<Map<string, ResourceDoc>> {
    if (keys.length === 0) return new Map();
    const docs = await byIds(this.scoped(ctx).resources, keys);
    return new Map(docs.map((d) => [d._id, d]));
  }

  /** Current, non-deleted resources by reference (`_include`, `$everything`, reference checks). */
  async findByKeys(
    ctx: TenantContext,
    version: FhirVersion,
    refs: readonly ResourceRef[],
  ): Promise<ResourceDoc[]> {
    if (refs.length === 0) return [];
    const keys = refs.map((r) => resourceKey(version, ctx.clientId, r.type, r.id));
    return byIds(this.scoped(ctx).resources, keys, { del: false });
  }

  /**
   * Current non-deleted resources of a version matching `filter` (built by the search lib), in
   * `sort` order (default: lastUpdated descending, then id). The tenant and version part is added here.
   */
  async search(
    ctx: TenantContext,
    version: FhirVersion,
    options: StoreSearchOptions,
  ): Promise<StoreSearchResult> {
    const filter = this.searchFilter(ctx, version, options);
    const hint = forContext(ctx, options.hint);
    const [docs, total] = await Promise.all([
      options.limit > 0
        ? this.sortedPage<ResourceDoc>(ctx, filter, {
            ...options,
            projection: options.withoutIndex === false ? undefined : WITHOUT_INDEX,
          })
        : Promise.resolve([]),
      options.count ? this.scoped(ctx).resources.countDocuments(filter, hint) : Promise.resolve(undefined),
    ]);
    return total === undefined ? { docs } : { docs, total };
  }

  /**
   * `limit` matches of `filter` in `sort` order from `skip`, shaped by `projection`: an
   * aggregation that sorts and limits before it projects. A `find` with the same projection is
   * the same on MongoDB, but DocumentDB evaluates a find's projection on every match before its
   * sort (each evaluation decompressing the stored document once more), where the pipeline's
   * `$project` runs on the page only (measured: docs/storage.md "Where the time goes").
   */
  private async sortedPage<T extends mongo.Document>(
    ctx: TenantContext,
    filter: ScopedFilter<ResourceDoc>,
    options: { sort?: SortOrder; skip?: number; limit: number; hint?: string; projection?: object },
    bson: { enableUtf8Validation?: boolean } = {},
  ): Promise<T[]> {
    const skip = options.skip ?? 0;
    const sort = options.sort ?? DEFAULT_SORT;
    const hint = forContext(ctx, options.hint);
    const matches = newestFirst(sort, options.hint)
      ? await this.newestWindow(ctx, filter, skip + options.limit, hint)
      : filter;
    // `$limit` of skip + limit before `$skip`: DocumentDB then keeps only that many in a top-N sort
    // (a `$skip` first makes it sort every match, spilling to disk); MongoDB does this by itself.
    const stages: object[] = [{ $sort: sort }, { $limit: skip + options.limit }];
    if (skip > 0) stages.push({ $skip: skip });
    if (options.projection) stages.push({ $project: options.projection });
    return this.scoped(ctx)
      .resources.aggregate<T>(matches, stages, { ...hint, ...bson })
      .toArray();
  }

  /**
   * `filter` narrowed to the newest lastUpdated window that holds `need` of its matches, so that
   * the page query sorts that window only (search/newest-window.ts); `filter` itself when the
   * matches are few or spread over the whole range.
   */
  private async newestWindow(
    ctx: TenantContext,
    filter: ScopedFilter<ResourceDoc>,
    need: number,
    hint: { hint?: string },
  ): Promise<ScopedFilter<ResourceDoc>> {
    const resources = this.scoped(ctx).resources;
    const within = (lu: LuRange): ScopedFilter<ResourceDoc> => ({
      ...filter,
      $and: [...(filter.$and ?? []), { lu }],
    });
    const start = await newestWindowStart(need, luBounds(filter), new Date(), {
      countIn: (lu) => resources.countDocuments(within(lu), hint),
      countUpTo: (limit) => resources.countDocuments(filter, { ...hint, limit }),
    });
    return start ? within({ $gte: start }) : filter;
  }

  /**
   * One searchset page (`page.size` matches from `options.skip`) held to `page.maxBytes` of
   * resource JSON (tenant fairness, docs/security.md): the matches in order while their JSON fits, and
   * always the first one. The engine reports each match's JSON size and returns the JSON itself
   * only for matches small enough that its whole reply stays within `maxBytes`; the larger
   * matches that fit are then fetched by `_id`. So a page of near-limit resources costs this
   * process (BSON decoding on the shared event loop) about `maxBytes`, not `size` times the largest
   * resource. One more match than the page is looked at: `hasNext` says whether any is left, and
   * when that one is not there the page saw every match from `skip` on: `matchesFromSkip` says how
   * many (also when the budget served fewer), so the total needs no count (a count reads every
   * match again). Strings are not re-validated as UTF-8 when decoded: every stored JSON was checked on the way
   * in (body-hygiene.ts), and the check costs about as much as the decoding itself.
   */
  async searchPage(
    ctx: TenantContext,
    version: FhirVersion,
    options: Omit<StoreSearchOptions, 'limit' | 'count' | 'withoutIndex'>,
    page: { size: number; maxBytes: number },
  ): Promise<SearchPageRows> {
    const projection = {
      ...Object.fromEntries(SERVED_FIELDS.map((field) => [field, 1])),
      size: JSON_SIZE,
      json: inlineJsonUpTo(page.maxBytes, page.size + 1),
    };
    const rows = await this.sortedPage<ResourceDoc & { size: number }>(
      ctx,
      this.searchFilter(ctx, version, { ...options, limit: page.size + 1 }),
      { ...options, limit: page.size + 1, projection },
      { enableUtf8Validation: false },
    );
    const kept = servedWithinBudget(
      ctx,
      rows.map((row) => row.size),
      page.maxBytes,
      { candidates: page.size },
    );
    const hasNext = rows.length > kept;
    const served = rows.slice(0, kept);
    const missing = served.filter((row) => typeof row.json !== 'string').map((row) => row._id);
    const resources = this.scoped(ctx).resources;
    const fetched =
      missing.length === 0
        ? []
        : await resources
            .find(resources.where({ _id: { $in: missing } }, { del: false }), {
              projection: WITHOUT_INDEX,
              enableUtf8Validation: false,
            })
            .toArray();
    const byId = new Map(fetched.map((doc) => [doc._id, doc]));
    // a match deleted between the two reads is left out, as if the search had run a moment later
    const docs = served.flatMap((row) => {
      const doc = typeof row.json === 'string' ? row : byId.get(row._id);
      return doc ? [withoutSize(doc)] : [];
    });
    const sawAll = rows.length <= page.size && (rows.length > 0 || (options.skip ?? 0) === 0);
    return { docs, hasNext, ...(sawAll ? { matchesFromSkip: rows.length } : {}) };
  }

  /**
   * Number of current non-deleted resources matching (Bundle.total, `_summary=count`); with
   * `limit`, at most that many: the count stops there (an estimated total, search-total.ts).
   */
  countBy(
    ctx: TenantContext,
    version: FhirVersion,
    options: Pick<StoreSearchOptions, 'type' | 'filter' | 'hint'> & { limit?: number },
  ): Promise<number> {
    const filter = this.searchFilter(ctx, version, { ...options, limit: 0 });
    const capped = options.limit === undefined ? {} : { limit: options.limit };
    return this.scoped(ctx).resources.countDocuments(filter, { ...forContext(ctx, options.hint), ...capped });
  }

  /**
   * The search's own conditions first, then the user, then `del`: the order of the filter's fields
   * is the order in which DocumentDB tests the conditions its index does not bound, each one on
   * the whole stored document (decompressed again for every condition: docs/storage.md "Where the
   * time goes"), and it stops at the first that fails. The search's conditions drop most of the
   * candidates, the user drops the other users' (one index serves them all), `del` almost never
   * drops one. MongoDB does not care about the order.
   */
  private searchFilter(
    ctx: TenantContext,
    version: FhirVersion,
    options: StoreSearchOptions,
  ): ScopedFilter<ResourceDoc> {
    const { del: _del, c: _c, u: _u, ...conditions } = options.filter ?? {};
    const type =
      typeof options.type === 'string'
        ? { t: options.type }
        : options.type
          ? { t: { $in: [...options.type] } }
          : {};
    // the tenant, version and type win over anything `conditions` says
    return this.scoped(ctx).resources.where({ ...conditions, v: version, ...type }, { del: false });
  }

  // ---- search support (chains, `_has`, includes, `$everything`) ---------------------

  /**
   * Chosen fields (`t`, `id`, `idx.ref` …) of current non-deleted resources matching a search-lib
   * filter, in `_id` order, at most `limit`: the sub-queries of chains, `_has` and includes.
   */
  findFields(
    ctx: TenantContext,
    version: FhirVersion,
    filter: Filter<ResourceDoc>,
    projection: Record<string, 1>,
    limit: number,
  ): Promise<Array<Partial<ResourceDoc> & Pick<ResourceDoc, '_id' | 't' | 'id'>>> {
    return this.scoped(ctx)
      .resources.find(this.searchFilter(ctx, version, { filter, limit }), {
        projection: { ...projection, t: 1, id: 1 },
      })
      .sort({ _id: 1 })
      .limit(limit)
      .toArray();
  }

  /**
   * Type, id, lastUpdated and JSON size of current non-deleted resources matching a search-lib
   * filter, in `_id` order (or `page.sort` from `page.skip`), at most `limit`, without their JSON:
   * what a page budget decides on before any JSON is read (`_include` / `_revinclude`,
   * `$everything`: docs/security.md "Page byte budget"); `findByKeys` then reads the few served.
   */
  sizesOf(
    ctx: TenantContext,
    version: FhirVersion,
    filter: Filter<ResourceDoc>,
    limit: number,
    page: { sort?: SortOrder; skip?: number; hint?: string } = {},
  ): Promise<SizedRef[]> {
    if (limit <= 0) return Promise.resolve([]);
    const skip = page.skip ?? 0;
    // `$limit` of skip + limit before `$skip`, as sortedPage: a top-N sort on DocumentDB
    const stages: object[] = [{ $sort: page.sort ?? { _id: 1 } }, { $limit: skip + limit }];
    if (skip > 0) stages.push({ $skip: skip });
    stages.push({ $project: SIZED_FIELDS });
    return this.scoped(ctx)
      .resources.aggregate<SizedRef>(
        this.searchFilter(ctx, version, { filter, limit }),
        stages,
        forContext(ctx, page.hint),
      )
      .toArray();
  }

  /**
   * Per resource type, how many current non-deleted resources match `filter`, and (with
   * `referencePattern`) the distinct `idx.ref` entries of those resources that match it: one pass
   * over the matches in the database, only the counts and the chosen references coming back
   * (`$everything`: totals, and what the compartment references outside it).
   */
  async countByType(
    ctx: TenantContext,
    version: FhirVersion,
    filter: Filter<ResourceDoc>,
    options: { referencePattern?: string; hint?: string } = {},
  ): Promise<TypeCount[]> {
    const rows = await this.scoped(ctx)
      .resources.aggregate<TypeCountRow>(
        this.searchFilter(ctx, version, { filter, limit: 0 }),
        [{ $group: typeCountGroup(options.referencePattern) }],
        options.hint === undefined ? {} : { hint: options.hint },
      )
      .toArray();
    return rows.map(typeCountOf);
  }

  /**
   * `countByType`, and in the same pass over the matches the resources `[skip, skip + limit)` in
   * `sort` order, by key and JSON size only (`$facet`: the matches are found once; the caller reads
   * the few its page budget serves by key, so the reply stays small whatever the resources weigh).
   */
  async countByTypeWithWindow(
    ctx: TenantContext,
    version: FhirVersion,
    filter: Filter<ResourceDoc>,
    options: { referencePattern?: string; hint?: string; sort: SortOrder; skip: number; limit: number },
  ): Promise<{ types: TypeCount[]; window: SizedRef[] }> {
    const { referencePattern, hint, sort, skip, limit } = options;
    const window: object[] = [{ $sort: sort }];
    if (skip > 0) window.push({ $skip: skip });
    window.push({ $limit: limit }, { $project: SIZED_FIELDS });
    const [row] = await this.scoped(ctx)
      .resources.aggregate<{ types: TypeCountRow[]; window: SizedRef[] }>(
        this.searchFilter(ctx, version, { filter, limit: 0 }),
        [{ $facet: { types: [{ $group: typeCountGroup(referencePattern) }], window } }],
        hint === undefined ? {} : { hint },
      )
      .toArray();
    return { types: (row?.types ?? []).map(typeCountOf), window: row?.window ?? [] };
  }

  /**
   * Removes many resources for good (`$everything` DELETE), in the order of `removeResource`:
   * the current documents first, then their history rows. Returns how many current documents went.
   */
  async removeResources(ctx: TenantContext, keys: readonly string[]): Promise<number> {
    if (keys.length === 0) return 0;
    const { resources, history } = this.scoped(ctx);
    const removed = await resources.deleteMany(resources.where({ _id: { $in: [...keys] } }));
    await history.deleteMany(history.where({ rk: { $in: [...keys] } }));
    await this.releaseIds(ctx, keys);
    return removed.deletedCount;
  }

  /** History rows of the given versions of one resource (absent rows left out), in the order asked. */
  historyRowsOf(ctx: TenantContext, key: string, versionIds: readonly number[]): Promise<HistoryDoc[]> {
    return byIds(
      this.scoped(ctx).history,
      versionIds.map((vid) => historyKey(key, vid)),
    );
  }

  findHistoryRow(ctx: TenantContext, key: string, versionId: number): Promise<HistoryDoc | null> {
    return findScoped(this.scoped(ctx).history, historyKey(key, versionId));
  }

  // ---- writes (write protocol, docs/storage.md) ---------------------------------------------
  // Documents are written under the context they were built from (ScopedCollection checks that
  // each belongs to it); look-ups of a version's row are client-wide, as its key is.

  /**
   * Step 1 for a new resource: its id claim (resource-ids.repository.ts), then the document. False
   * when the key exists already or another user holds its claim (someone created it first).
   */
  async insertCurrent(ctx: TenantContext, doc: ResourceDoc): Promise<boolean> {
    if ((await this.ids.claim(ctx, doc.u, [doc._id])).size > 0) return false;
    return (await this.scoped(ctx).resources.insertIgnoringDuplicates([doc])).length === 0;
  }

  /**
   * Step 1 for many new resources at once (bundle ingest). Returns the keys that already existed;
   * every other document was inserted.
   */
  async insertCurrentMany(ctx: TenantContext, docs: readonly ResourceDoc[]): Promise<Set<string>> {
    if (docs.length === 0) return new Set();
    const refused = await this.claimAll(ctx, docs);
    const claimed = docs.filter((doc) => !refused.has(doc._id));
    const existing = await this.scoped(ctx).resources.insertIgnoringDuplicates(claimed);
    return new Set([...refused, ...existing.map((index) => claimed[index]._id)]);
  }

  /** Id claims of new documents, per owning user; returns the keys another user holds. */
  private async claimAll(ctx: TenantContext, docs: readonly ResourceDoc[]): Promise<Set<string>> {
    const refused = new Set<string>();
    for (const userId of new Set(docs.map((doc) => doc.u))) {
      const keys = docs.filter((doc) => doc.u === userId).map((doc) => doc._id);
      for (const key of await this.ids.claim(ctx, userId, keys)) refused.add(key);
    }
    return refused;
  }

  /**
   * Step 1 for a new version: compare-and-set from version `expectedVid` of the caller's resource.
   * False when another writer got there first (the caller re-reads and retries).
   */
  async compareAndSet(
    ctx: TenantContext,
    key: string,
    expectedVid: number,
    next: Pick<ResourceDoc, 'vid' | 'lu' | 'del' | 'json'> & { idx?: object },
  ): Promise<boolean> {
    const update =
      next.idx === undefined
        ? {
            $set: { vid: next.vid, lu: next.lu, del: next.del, json: next.json },
            $unset: { idx: '' as const },
          }
        : { $set: { vid: next.vid, lu: next.lu, del: next.del, json: next.json, idx: next.idx } };
    const resources = this.scoped(ctx).resources;
    const result = await resources.updateOne(resources.where({ _id: key }, { vid: expectedVid }), update);
    return result.matchedCount === 1;
  }

  /**
   * History rows; rows already there (a retry, a repair) are left as they are, except a row older
   * than the one offered (`lu` earlier): an orphan of an earlier life of the same id, left by an
   * interrupted removal, which the new version replaces. Returns the indexes of rows that were
   * already there and kept.
   */
  async insertHistory(ctx: TenantContext, rows: readonly HistoryDoc[]): Promise<Set<number>> {
    const kept = new Set<number>();
    if (rows.length === 0) return kept;
    const history = this.scoped(ctx).history;
    const client = this.scoped(clientWide(ctx)).history;
    for (const index of await history.insertIgnoringDuplicates(rows)) {
      const row = rows[index];
      const replaced = await client.replaceOne(client.where({ _id: row._id, lu: { $lt: row.lu } }), row);
      if (replaced.matchedCount === 0) kept.add(index);
    }
    return kept;
  }

  /**
   * Claims version `next.vid` of a resource by inserting its history row: the insert of a unique
   * `_id` is atomic, so of concurrent writers of the same version exactly one succeeds. `previous`
   * (the version being replaced) is inserted in the same call in case a crash had left its row
   * missing. Returns false when another writer holds that version.
   */
  async claimVersion(ctx: TenantContext, previous: HistoryDoc, next: HistoryDoc): Promise<boolean> {
    const existing = await this.scoped(ctx).history.insertIgnoringDuplicates([previous, next]);
    return !existing.includes(1);
  }

  findHistoryRowByKey(ctx: TenantContext, rowKey: string): Promise<HistoryDoc | null> {
    const history = this.scoped(clientWide(ctx)).history;
    return history.findOne(history.where({ _id: rowKey }));
  }

  /** Replaces a history row still holding `expectedLu` (an orphan of an earlier life of the id). */
  async replaceHistoryRow(ctx: TenantContext, row: HistoryDoc, expectedLu: Date): Promise<boolean> {
    const history = this.scoped(clientWide(ctx)).history;
    return (
      (await history.replaceOne(history.where({ _id: row._id, lu: expectedLu }), row)).matchedCount === 1
    );
  }

  /** Inserts current documents that may exist already (Provenances with deterministic ids). */
  async insertCurrentIgnoringExisting(ctx: TenantContext, docs: readonly ResourceDoc[]): Promise<void> {
    if (docs.length === 0) return;
    const refused = await this.claimAll(ctx, docs);
    await this.scoped(ctx).resources.insertIgnoringDuplicates(docs.filter((doc) => !refused.has(doc._id)));
  }

  /**
   * `DELETE …/_history/{vid}`: the version's row becomes `gone` (json dropped). Upserted from
   * `fallback` when a crash had left the row missing, so the removal is never lost.
   */
  async markVersionGone(ctx: TenantContext, row: HistoryDoc): Promise<void> {
    const history = this.scoped(ctx).history;
    const filter = history.where({ _id: row._id });
    // Fields of the filter are copied into an upserted row by the engine; setting them again
    // in $setOnInsert is refused by some engines, so only the others are listed.
    const { _id, json: _json, gone: _gone, c: _c, u, ...identity } = row;
    const onInsert = filter.u === undefined ? { ...identity, u } : identity;
    await history.updateOne(
      filter,
      { $set: { gone: true, json: null }, $setOnInsert: onInsert },
      { upsert: true },
    );
  }

  /**
   * Rewrites version `vid` of a resource in place, current document and history row, with no new
   * version: a removal of other resources taking them out of a bundle's Provenance (`$everything`
   * DELETE), so that nothing still names what was removed. No-op if the resource moved on.
   */
  async rewriteInPlace(
    ctx: TenantContext,
    key: string,
    vid: number,
    next: { json: string; idx: object | undefined },
  ): Promise<void> {
    const { resources, history } = this.scoped(ctx);
    const set = next.idx === undefined ? { $set: { json: next.json } } : { $set: next };
    const moved = await resources.updateOne(resources.where({ _id: key }, { vid }), set);
    if (moved.matchedCount === 0) return;
    await history.updateOne(history.where({ _id: historyKey(key, vid) }), { $set: { json: next.json } });
  }

  /**
   * Removes a resource for good: the current document first (every reader sees 404 at once), then
   * its history rows (a crash in between leaves orphan rows no reader sees; `store check` deletes them).
   */
  async removeResource(ctx: TenantContext, key: string): Promise<boolean> {
    const { resources, history } = this.scoped(ctx);
    const removed = await resources.deleteOne(resources.where({ _id: key }));
    await history.deleteMany(history.where({ rk: key }));
    await this.releaseIds(ctx, [key]);
    return removed.deletedCount === 1;
  }

  /** Id claims of removed resources go last: the id is free once nothing of it is left. */
  private async releaseIds(ctx: TenantContext, keys: readonly string[]): Promise<void> {
    if (ctx.userId !== null) await this.ids.release(ctx, ctx.userId, keys);
  }
}
