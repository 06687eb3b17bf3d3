import { Inject, Injectable } from '@nestjs/common';
import { OperationOutcomeError, SearchError, type FhirVersion, type ParsedSearch } from '@app/fhir';
import { SETTINGS } from '../../config/config.module';
import type { Settings } from '../../config/settings';
import type { TenantContext } from '../../tenancy/tenant-context';
import type { ResourceDoc } from '../documents';
import { LAST_UPDATED_INDEX } from '../indexes';
import { ResourceRepository, type SearchPageRows } from '../resource.repository';
import { buildFilter } from './filter-builder';
import type { Filter } from './filter-clauses';
import { FirstPageFits, searchShape } from './first-page-fits';
import { INDEX_NAMES } from './search-indexes';
import { SubQueryResolver } from './sub-query-resolver';

/** Search-lib errors are the client's: 400 with the issue code the lib chose. */
export function asOutcomeError(error: unknown): unknown {
  if (error instanceof SearchError)
    return new OperationOutcomeError(error.code, error.message, { status: 400 });
  return error;
}

/**
 * Where a search runs beyond its own parameters: a compartment's restriction
 * (patient-compartment-filter.ts `compartmentWithin`). Opaque above storage: a feature names the
 * compartment, storage builds the query.
 */
export interface SearchWithin {
  readonly restriction: Filter;
}

/** `searchPage`'s page: `size` matches held to `maxBytes` of JSON (size 0: only whether one exists). */
export interface SearchPageSize {
  size: number;
  maxBytes: number;
  /** Each match with its `idx.ref` entries (the references an `_include` follows). */
  references?: boolean;
}

/** A searchset page's matches, and (when asked and the page did not tell it) the count of all matches. */
export interface SearchPageResult extends SearchPageRows {
  /** What the count asked for answered (at most its `limit`); only when `matchesFromSkip` is unknown. */
  counted?: number;
}

/**
 * Whether the references and token indexes hold the page's order after the reference or token
 * (`lu, id`: newest first, or walked backwards). Otherwise the order is a `_sort` parameter's key
 * (`idx.srt.*`), which no index holds: the page query reads and sorts every match.
 */
function inIndexOrder(sort: Record<string, 1 | -1>): boolean {
  return Object.keys(sort).join() === 'lu,id';
}

/** A search bounded by one reference on the references index: one patient's resources of a type. */
function ofOneReference(query: { filter: Filter; hint?: string }): boolean {
  return query.hint === INDEX_NAMES.ref && boundByOne(query.filter, 'idx.ref');
}

/**
 * A search bounded by one token on the token index (`Observation?code=X&date=…`), whose index
 * holds `lu, id` after the token: read in that order it stops once it has seen `limit` matches.
 */
function ofOneTokenInIndexOrder(query: {
  filter: Filter;
  hint?: string;
  sort: Record<string, 1 | -1>;
}): boolean {
  return query.hint === INDEX_NAMES.tok && inIndexOrder(query.sort) && boundByOne(query.filter, 'idx.tok');
}

/** Whether one of the filter's conditions is an equality on `field` (one index key). */
function boundByOne(filter: Filter, field: 'idx.ref' | 'idx.tok'): boolean {
  const conditions = (filter as { $and?: unknown }).$and;
  return (
    Array.isArray(conditions) &&
    conditions.some((condition) => typeof (condition as Record<string, unknown>)[field] === 'string')
  );
}

/**
 * Search execution in the caller's tenant scope (docs/architecture.md "Path of a search"): the
 * parsed search becomes the store filter (filter-builder.ts), chains and `_has` run first
 * (sub-query-resolver.ts), the index to run on is chosen here (the compartment's too), and the page
 * is read within its byte budget (ResourceRepository.searchPage, page-budget.ts). Features hand
 * over a ParsedSearch and get resources back: none builds a filter or names an index.
 */
@Injectable()
export class SearchExecutor {
  /** Search page queries of this process running now (`lateCount`: whether the engine has room). */
  private pagesInFlight = 0;
  /** Which counted searches' first pages lately held all their matches (then served plain). */
  private readonly firstPageFits = new FirstPageFits();

  constructor(
    private readonly repository: ResourceRepository,
    private readonly subQueries: SubQueryResolver,
    @Inject(SETTINGS) private readonly settings: Pick<Settings, 'searchCountBesideAfterMs'>,
  ) {}

  /**
   * One page of a search from `parsed.skip`. `count`: also count the matches (at most `limit`)
   * when the page does not tell the total itself; the count starts beside the page query once
   * that query has run for SEARCH_COUNT_BESIDE_AFTER_MS while no other page query runs
   * (`lateCount`), one reference's only after it.
   */
  async searchPage(
    ctx: TenantContext,
    version: FhirVersion,
    parsed: ParsedSearch,
    options: { within?: SearchWithin; page: SearchPageSize; count?: { limit?: number } },
  ): Promise<SearchPageResult> {
    const query = await this.queryOf(ctx, version, parsed, options.within);
    const countLimit = options.count?.limit;
    // One reference's matches are few (a patient's), and the count of a capped total reads every
    // one of them up to the cap, each document fetched (the user and `del` are not in the index):
    // the page and its count are one query, which reads them once rather than twice. So too one
    // token's in its index's order (code + date): whenever the count runs, it reads every
    // candidate the page read and those after, up to the cap; when the page tells the total, it
    // read them all itself. One query reading up to the cap never reads more than the page and
    // its count, and saves a query (docs/storage.md "Totals", measured). Sorted by a parameter,
    // a token's matches (client-wide, unbounded: one query would sort and hold them all) keep the
    // page query and a count of their own.
    const counted =
      countLimit !== undefined &&
      options.within === undefined &&
      (ofOneReference(query) ||
        // a later page past the cap keeps its own shape: the query holds no more than the cap's rows
        (ofOneTokenInIndexOrder(query) && parsed.skip + options.page.size < countLimit));
    // A first page whose matches all fit it tells the total by itself: when this search's first
    // pages lately did, a plain page (a quarter less engine work) is the better bet, with a count
    // after it only if it did not hold every match (docs/storage.md "Totals", measured).
    const shape = counted && parsed.skip === 0 ? searchShape(ctx.clientId, parsed) : undefined;
    if (counted && (shape === undefined || !this.firstPageFits.likely(shape))) {
      const page = await this.repository.searchPageCounted(
        ctx,
        version,
        { filter: query.filter, hint: query.hint, sort: query.sort, skip: parsed.skip },
        options.page,
        { limit: countLimit, inIndexOrder: inIndexOrder(query.sort) },
      );
      if (shape !== undefined) this.firstPageFits.record(shape, page.matchesFromSkip !== undefined);
      return page;
    }
    // One reference's matches are few: their count after the page costs a few ms, where started
    // beside it, it is mostly wasted (the page, slowed by a busy engine rather than by its matches,
    // then saw the last match and told the total itself).
    const counter = options.count
      ? this.lateCount(
          ctx,
          version,
          { filter: query.filter, hint: query.hint, limit: options.count.limit },
          options.within === undefined && ofOneReference(query)
            ? undefined
            : this.settings.searchCountBesideAfterMs,
        )
      : undefined;
    let page: SearchPageRows;
    this.pagesInFlight++;
    try {
      page = await this.repository.searchPage(
        ctx,
        version,
        { filter: query.filter, hint: query.hint, sort: query.sort, skip: parsed.skip },
        options.page,
      );
    } finally {
      this.pagesInFlight--;
      counter?.stopIfNotStarted();
    }
    if (shape !== undefined) this.firstPageFits.record(shape, page.matchesFromSkip !== undefined);
    if (counter === undefined || page.matchesFromSkip !== undefined) return page;
    return { ...page, counted: await counter.count() };
  }

  /**
   * Whether `type/id` is a current resource in the caller's scope: only its size is read, the
   * JSON stays in the database (a compartment search's Patient must exist).
   */
  async exists(ctx: TenantContext, version: FhirVersion, type: string, id: string): Promise<boolean> {
    const key = this.repository.key(ctx, version, type, id);
    return (await this.repository.sizesOf(ctx, version, { _id: key }, 1)).length > 0;
  }

  /** Every match counted (`_summary=count`). */
  async count(
    ctx: TenantContext,
    version: FhirVersion,
    parsed: ParsedSearch,
    within?: SearchWithin,
  ): Promise<number> {
    const { filter, hint } = await this.queryOf(ctx, version, parsed, within);
    return this.repository.countBy(ctx, version, { filter, hint });
  }

  /** At most `limit` current matches in the default order (conditional interactions). */
  async matches(
    ctx: TenantContext,
    version: FhirVersion,
    parsed: ParsedSearch,
    limit: number,
  ): Promise<ResourceDoc[]> {
    const { filter } = await this.queryOf(ctx, version, parsed);
    return (await this.repository.search(ctx, version, { filter, limit })).docs;
  }

  /** The store filter, order and index of a parsed search: chains and `_has` resolved. */
  private async queryOf(
    ctx: TenantContext,
    version: FhirVersion,
    parsed: ParsedSearch,
    within?: SearchWithin,
  ) {
    let built;
    try {
      built = buildFilter(parsed);
    } catch (error) {
      throw asOutcomeError(error);
    }
    const searched = await this.subQueries.resolve(ctx, version, built);
    const filter = within ? { $and: [searched, within.restriction] } : searched;
    // Without a clause of its own a compartment search runs on the references the compartment names.
    const hint =
      within && (built.index === undefined || built.index === LAST_UPDATED_INDEX)
        ? INDEX_NAMES.ref
        : built.index;
    return { filter, hint, sort: built.sort };
  }

  /**
   * The count for Bundle.total, started beside the page query once that query has run for
   * `besideAfterMs` (SEARCH_COUNT_BESIDE_AFTER_MS; undefined: only after it): a search that
   * answers sooner (a few matches, usually one page that tells its total) costs no count; a slow
   * one (many matches) has its count run at the same time instead of after it. Only while no other
   * search page query runs: then the page is slow because of its own matches and the engine has
   * room for the count; with others running, the engine is busy, a page slowed by the load rather
   * than by its matches would start a count it may not need, and the count, competing for the
   * same cores, would not answer sooner. It then runs after the page, when the page did not tell
   * the total (docs/storage.md "Totals").
   */
  private lateCount(
    ctx: TenantContext,
    version: FhirVersion,
    query: Parameters<ResourceRepository['countBy']>[2],
    besideAfterMs: number | undefined,
  ) {
    let started: Promise<{ count: number } | { error: unknown }> | undefined;
    const start = () =>
      // Settled at once: a count nobody waits for (the page told the total) is no unhandled rejection.
      (started ??= this.repository.countBy(ctx, version, query).then(
        (count) => ({ count }),
        (error: unknown) => ({ error }),
      ));
    const timer =
      besideAfterMs === undefined
        ? undefined
        : setTimeout(() => {
            if (this.pagesInFlight <= 1) void start();
          }, besideAfterMs);
    return {
      stopIfNotStarted: () => clearTimeout(timer),
      count: async (): Promise<number> => {
        const counted = await start();
        if ('error' in counted) throw counted.error;
        return counted.count;
      },
    };
  }
}
