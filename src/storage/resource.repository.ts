import { Injectable } from '@nestjs/common';
import type { mongo } from 'mongoose';
import { historyKey, resourceKey, type FhirVersion } from '@app/fhir';
import type { TenantContext } from '../tenancy/tenant-context';
import { inlineJsonUpTo, JSON_SIZE, servedWithinBudget } from './page-budget';
import type { HistoryDoc, ResourceDoc } from './documents';
import { ResourceStorage, type TenantStore } from './resource-storage';
import { byIds, findScoped, WITHOUT_INDEX } from './scoped-lookups';
import { type Filter, type ScopedFilter } from './tenant-scope';
import { KEY_INDEX, LAST_UPDATED_INDEX, USER_LAST_UPDATED_INDEX } from './indexes';
import { keyOrderIndex, typeKeySpace } from './key-space';
import { luBounds, newestWindowStart, type LuRange } from './search/newest-window';
import { mergeInOrder, referencesToMerge, typesToMerge } from './search/per-type-pages';
import { INDEX_NAMES } from './search/search-indexes';

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

/** `SIZED_FIELDS`, and with `jsonUpTo` the JSON of rows small enough that `rows` of them fit it. */
function sizedFields(jsonUpTo: number | undefined, rows: number): object {
  return jsonUpTo === undefined ? SIZED_FIELDS : { ...SIZED_FIELDS, json: inlineJsonUpTo(jsonUpTo, rows) };
}

type SortOrder = Readonly<Record<string, 1 | -1>>;

/** Search order without `_sort`: newest first, then id (a total order: stable pages). */
const DEFAULT_SORT = { lu: -1, id: 1 } as const;

/** The fields of a current document that are served (all but `idx`), for inclusion projections. */
const SERVED_FIELDS = ['_id', 'v', 'c', 'u', 't', 'id', 'vid', 'lu', 'del'] as const satisfies ReadonlyArray<
  keyof ResourceDoc
>;

/** The served fields as an inclusion projection: built once, every page query sends it. */
const SERVED_PROJECTION: Readonly<Record<string, 1>> = Object.fromEntries(
  SERVED_FIELDS.map((field) => [field, 1]),
);

/** The served fields as expressions (a document built in a pipeline): built once, like the projection. */
const SERVED_EXPRESSIONS: Readonly<Record<string, string>> = Object.fromEntries(
  SERVED_FIELDS.map((field) => [field, `$${field}`]),
);

/** A searchset page: its size, its JSON budget, whether its rows bring their references. */
interface PageShape {
  size: number;
  maxBytes: number;
  references?: boolean;
}

/**
 * A searchset page's projection: the served fields, the JSON's size, the JSON when small
 * (page-budget.ts), and the `idx.ref` entries when asked (an `_include` then reads no more).
 */
function pageFields(page: PageShape): object {
  const fields = {
    ...SERVED_PROJECTION,
    size: JSON_SIZE,
    json: inlineJsonUpTo(page.maxBytes, page.size + 1),
  };
  return page.references ? { ...fields, 'idx.ref': 1 } : fields;
}

/**
 * `pageFields` as an expression (a document the engine holds in an array): the JSON inline only
 * when `rows` of its size fit the page's budget, so that what is held stays within it however many
 * rows come before the page.
 */
function heldPageFields(page: PageShape, rows: number): object {
  const fields = {
    ...SERVED_EXPRESSIONS,
    size: JSON_SIZE,
    json: inlineJsonUpTo(page.maxBytes, rows),
  };
  return page.references ? { ...fields, idx: { ref: '$idx.ref' } } : fields;
}

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
 * The index a search runs on in this context: one user's search in lastUpdated or key order reads
 * the user's own index (a client-wide one would hold every user's entries, each tested for `u` on
 * its stored document).
 */
function forContext(ctx: TenantContext, hint: string | undefined): { hint?: string } {
  if (hint === undefined) return {};
  if (hint === KEY_INDEX) return { hint: keyOrderIndex(ctx) };
  return { hint: hint === LAST_UPDATED_INDEX && ctx.userId !== null ? USER_LAST_UPDATED_INDEX : hint };
}

/**
 * Newest first on the lastUpdated index: the order a window of lastUpdated can serve (the filter
 * builder names that index only for searches bounded by nothing but `_lastUpdated`).
 */
function newestFirst(sort: SortOrder, hint: string | undefined): boolean {
  return hint === LAST_UPDATED_INDEX && Object.entries(sort)[0]?.join() === 'lu,-1';
}

/**
 * Current documents and history rows of the FHIR resources (docs/storage.md): reads by key and by
 * search (the write protocol's steps are resource-writes.repository.ts). Every method takes the
 * `TenantContext` first and works on
 * `ResourceStorage.scoped(ctx)`, whose filters carry the tenant keys by construction.
 * Raw driver collections: reads return the stored JSON text untouched (the hot path).
 */
@Injectable()
export class ResourceRepository {
  constructor(private readonly storage: ResourceStorage) {}

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
    const scans = this.scansToMerge(filter, sort, options.hint);
    if (scans) return this.mergedPage<T>(ctx, scans, { ...options, skip, sort }, bson);
    const hint = forContext(ctx, options.hint);
    // Where the engine walks the index in order the page stops after its rows by itself: the
    // window's counts would only come on top (docs/storage.md "Sorted pages", measured).
    const windowed = newestFirst(sort, options.hint) && !this.storage.readsIndexesInOrder;
    const matches = windowed ? await this.newestWindow(ctx, filter, skip + options.limit, hint) : filter;
    // `$limit` of skip + limit before `$skip`: DocumentDB then keeps only that many in a top-N sort
    // (a `$skip` first makes it sort every match, spilling to disk); MongoDB does this by itself.
    const stages: object[] = [{ $sort: sort }, { $limit: skip + options.limit }];
    if (skip > 0) stages.push({ $skip: skip });
    if (options.projection) stages.push({ $project: options.projection });
    return this.scoped(ctx).resources.aggregateRows<T>(matches, stages, options.limit, { ...hint, ...bson });
  }

  /**
   * The filters whose ordered scans, merged, serve a page in lastUpdated order that one query would
   * sort (search/per-type-pages.ts): a type list on the lastUpdated index, a reference's forms on
   * the references index. Undefined: one query.
   */
  private scansToMerge(
    filter: ScopedFilter<ResourceDoc>,
    sort: SortOrder,
    hint: string | undefined,
  ): Array<ScopedFilter<ResourceDoc>> | undefined {
    if (hint === LAST_UPDATED_INDEX) return typesToMerge(filter, sort)?.map((t) => ({ ...filter, t }));
    if (hint === INDEX_NAMES.ref && this.storage.readsIndexesInOrder) return referencesToMerge(filter, sort);
    return undefined;
  }

  /**
   * `sortedPage` over several scans (`scansToMerge`): each one's first `skip + limit` keys in index
   * order, merged; then the page's documents by `_id`, shaped by `projection`, in page order (one
   * deleted in between is left out).
   */
  private async mergedPage<T extends mongo.Document>(
    ctx: TenantContext,
    scans: ReadonlyArray<ScopedFilter<ResourceDoc>>,
    options: { sort: SortOrder; skip: number; limit: number; hint?: string; projection?: object },
    bson: { enableUtf8Validation?: boolean },
  ): Promise<T[]> {
    const { sort, skip, limit } = options;
    const keys = { _id: 1, t: 1, ...Object.fromEntries(Object.keys(sort).map((field) => [field, 1])) };
    const perScan = await Promise.all(
      scans.map((scan) =>
        this.sortedPage<ResourceDoc>(ctx, scan, {
          ...options,
          skip: 0,
          limit: skip + limit,
          projection: keys,
        }),
      ),
    );
    const page = mergeInOrder(perScan, sort).slice(skip, skip + limit);
    if (page.length === 0) return [];
    const resources = this.scoped(ctx).resources;
    const stages: object[] = options.projection ? [{ $project: options.projection }] : [];
    const docs = await resources.aggregateRows<T>(
      resources.where({ _id: { $in: page.map((row) => row._id) } }, { del: false }),
      stages,
      page.length,
      bson,
    );
    const byId = new Map(docs.map((doc) => [doc._id as string, doc]));
    return page.flatMap((row) => byId.get(row._id) ?? []);
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
    page: PageShape,
  ): Promise<SearchPageRows> {
    const rows = await this.sortedPage<ResourceDoc & { size: number }>(
      ctx,
      this.searchFilter(ctx, version, { ...options, limit: page.size + 1 }),
      { ...options, limit: page.size + 1, projection: pageFields(page) },
      { enableUtf8Validation: false },
    );
    return this.servedPage(ctx, rows, page, options.skip ?? 0);
  }

  /**
   * `searchPage` and the count of its matches (at most `countLimit`) in one query, for matches
   * known to be few (one reference's resources) or read in index order up to the cap (one
   * token's, search-executor.ts). `inIndexOrder`: the index walked holds `sort`, so the query reads
   * it in order and stops after `countLimit` matches (or the page's end, if later), the page being
   * the first of them (`$firstN`); otherwise no index holds the order (a `_sort` parameter's key),
   * the query reads every match anyway and keeps the page's in a top-N heap (`$topN`). One `$group`
   * counts the matches and holds the page's documents beside the count: a `$facet` of the page and
   * a `$count` would first copy every match into the engine's temporary store (docs/storage.md
   * "Totals", measured). Either way a second query reading the matches again is saved.
   */
  async searchPageCounted(
    ctx: TenantContext,
    version: FhirVersion,
    options: Omit<StoreSearchOptions, 'limit' | 'count' | 'withoutIndex'> & { sort: SortOrder },
    page: PageShape,
    count: { limit: number; inIndexOrder: boolean },
  ): Promise<SearchPageRows & { counted: number }> {
    const skip = options.skip ?? 0;
    const pageEnd = skip + page.size + 1;
    const row = heldPageFields(page, pageEnd);
    const held = count.inIndexOrder
      ? { $firstN: { n: pageEnd, input: row } }
      : { $topN: { n: pageEnd, sortBy: options.sort, output: row } };
    const stages: object[] = count.inIndexOrder
      ? [{ $sort: options.sort }, { $limit: Math.max(count.limit, pageEnd) }]
      : [];
    stages.push(
      { $group: { _id: null, n: { $sum: 1 }, rows: held } },
      { $project: { _id: 0, n: 1, rows: { $slice: ['$rows', skip, page.size + 1] } } },
    );
    const [result] = await this.scoped(ctx).resources.aggregateRows<{
      rows: Array<ResourceDoc & { size: number }>;
      n: number;
    }>(this.searchFilter(ctx, version, { ...options, limit: page.size + 1 }), stages, 1, {
      ...forContext(ctx, options.hint),
      enableUtf8Validation: false,
    });
    const served = await this.servedPage(ctx, result?.rows ?? [], page, skip);
    return { ...served, counted: Math.min(result?.n ?? 0, count.limit) };
  }

  /**
   * The page's rows (one more than `page.size` looked at) held to `page.maxBytes`: those served in
   * order, their JSON inline or fetched by `_id` (`searchPage`).
   */
  private async servedPage(
    ctx: TenantContext,
    rows: Array<ResourceDoc & { size: number }>,
    page: PageShape,
    skip: number,
  ): Promise<SearchPageRows> {
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
    const sawAll = rows.length <= page.size && (rows.length > 0 || skip === 0);
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
    const t = type.t ?? conditions.t;
    if (options.hint === KEY_INDEX && typeof t === 'string') {
      // read in key order: the type's key space bounds the primary key's scan (key-space.ts)
      const { prefix, end } = typeKeySpace(ctx, version, t);
      conditions.$and = [...(conditions.$and ?? []), { _id: { $gte: prefix, $lt: end } }];
    }
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
   * With `page.jsonUpTo`, also the JSON of those small enough that `limit` of them stay within it
   * (page-budget.ts `inlineJsonUpTo`): a page of them then needs no read by key.
   */
  sizesOf(
    ctx: TenantContext,
    version: FhirVersion,
    filter: Filter<ResourceDoc>,
    limit: number,
    page: { sort?: SortOrder; skip?: number; hint?: string; jsonUpTo?: number } = {},
  ): Promise<Array<SizedRef & { json?: string }>> {
    if (limit <= 0) return Promise.resolve([]);
    const skip = page.skip ?? 0;
    // `$limit` of skip + limit before `$skip`, as sortedPage: a top-N sort on DocumentDB
    const stages: object[] = [{ $sort: page.sort ?? { _id: 1 } }, { $limit: skip + limit }];
    if (skip > 0) stages.push({ $skip: skip });
    stages.push({ $project: sizedFields(page.jsonUpTo, limit) });
    return this.scoped(ctx).resources.aggregateRows<SizedRef & { json?: string }>(
      this.searchFilter(ctx, version, { filter, limit }),
      stages,
      limit,
      forContext(ctx, page.hint),
    );
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
}
