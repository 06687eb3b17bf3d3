import { Inject, Injectable } from '@nestjs/common';
import {
  OperationOutcomeError,
  searchsetBundleJson,
  type FhirVersion,
  type ParsedSearch,
  type SearchsetEntry,
  shapedResourceJson,
} from '@app/fhir';
import { SETTINGS } from '../../../config/config.module';
import type { Settings } from '../../../config/settings';
import type { TenantContext } from '../../../tenancy/tenant-context';
import { page, type Page } from '../../../fhir-http/results';
import type { ResourceDoc } from '../../../storage/documents';
import { servedWithinBudget } from '../../../storage/page-budget';
import type { SearchWithin } from '../../../storage/search/search-executor';
import { StorageService } from '../../../storage/storage-handle';
import { compartmentWithin } from '../../../storage/search/compartment-search-filter';
import {
  includeDepthCappedEntry,
  IncludeResolver,
  type IncludedDoc,
  includesTruncatedEntry,
} from '../../../storage/search/include-resolver';
import { isLenientHandling, isStrictHandling } from '../../../fhir-http/prefer';
import type { SearchPairs } from '../../../fhir-http/search-pairs';
import { resourceEntry, searchLinks, unknownParamsEntry } from './searchset-bundle';
import { FULL_TEXT_OFF, linkPairs, normalizeReferenceValues, parseOrReject } from './search-request';
import { totalCount, totalOf } from './search-total';
import { DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE } from '../page-size';

/**
 * FHIR search (docs/api.md §6; https://hl7.org/fhir/R4/search.html): type-level
 * `GET /{v}/{type}`, `POST /{v}/{type}/_search` and system-level `GET /{v}?_type=…`. The search
 * lib parses and builds the filter; this service runs it in the caller's tenant scope (chains and
 * `_has` first, includes after), and assembles the searchset Bundle with absolute paging links.
 */
@Injectable()
export class SearchService {
  constructor(
    private readonly storage: StorageService,
    private readonly includes: IncludeResolver,
    @Inject(SETTINGS) private readonly settings: Settings,
  ) {}

  /** `_content`/`_text` refused (or ignored under lenient handling) when full text is off. */
  private get fullTextOff(): string | undefined {
    return this.settings.fullText ? undefined : FULL_TEXT_OFF;
  }

  /**
   * Compartment search (https://hl7.org/fhir/R4/http.html#vsearch) `GET /{v}/{compartment}/{id}/{type}`
   * and `POST …/{type}/_search`: the type-level search restricted to the compartment, with its own
   * paging links; `type` undefined (`GET /{v}/{compartment}/{id}/*`): the system-level search
   * (`_type` narrows it) over every type of the compartment. The Patient must exist in the
   * caller's scope (404 otherwise, as `$everything`).
   */
  async compartmentSearch(
    ctx: TenantContext,
    version: FhirVersion,
    compartment: string,
    id: string,
    type: string | undefined,
    pairs: SearchPairs,
    prefer?: string,
  ): Promise<Page> {
    const base = this.settings.urls.base;
    const restriction = compartmentWithin(version, compartment, id, type);
    // its existence only: the Patient is not served
    if (!(await this.storage.for(ctx).exists(version, 'Patient', id)))
      throw OperationOutcomeError.notFound(`Patient/${id} is not known`);
    return this.search(ctx, version, type, pairs, prefer, {
      within: { url: `${base}/${version}/${compartment}/${id}/${type ?? '*'}`, restriction },
    });
  }

  /**
   * `options.within`: a compartment's restriction and URL. `options.maxBytes`: the page's byte
   * budget (default SEARCH_PAGE_MAX_BYTES; a batch gives each GET entry what its response has left,
   * docs/security.md "Page byte budget"). With no budget left (0 or less) the page serves no match
   * and its `next` link is this same page, so the client fetches it on its own; total and
   * whether that page holds anything are still told exactly.
   */
  async search(
    ctx: TenantContext,
    version: FhirVersion,
    type: string | undefined,
    pairs: SearchPairs,
    prefer?: string,
    options: { within?: { url: string; restriction: SearchWithin }; maxBytes?: number } = {},
  ): Promise<Page> {
    const { within } = options;
    const maxBytes = options.maxBytes ?? this.settings.searchPageMaxBytes;
    const base = this.settings.urls.base;
    const parsed = parseOrReject(version, type, pairs, {
      strict: isStrictHandling(prefer),
      lenient: isLenientHandling(prefer),
      fullTextOff: this.fullTextOff,
      defaultCount: DEFAULT_PAGE_SIZE,
      maxCount: MAX_PAGE_SIZE,
      // `_skip` up to SEARCH_MAX_SKIP, then one full page.
      maxWindow: this.settings.searchMaxSkip + MAX_PAGE_SIZE,
    });
    if (version === 'dstu2' && parsed.include.length + parsed.revinclude.length > 0) {
      // docs/api.md §14: R4 only; STU3 shares the R4 semantics, DSTU2 reference parameters differ.
      throw new OperationOutcomeError(
        'not-supported',
        '_include and _revinclude are not supported on DSTU2',
        { status: 400 },
      );
    }
    normalizeReferenceValues(parsed, base);
    const searchUrl = within?.url ?? (type ? `${base}/${version}/${type}` : `${base}/${version}`);
    const kept = linkPairs(pairs);
    const warnings = unknownParamsEntry(parsed.unknown);

    if (parsed.summary === 'count') {
      const total = await this.storage.for(ctx).searchCount(version, parsed, within?.restriction);
      const links = searchLinks(searchUrl, kept, {
        skip: 0,
        count: parsed.count,
        total,
        hasNext: false,
      }).slice(0, 1);
      return this.bundle({ total, links, entries: warnings ? [warnings] : [] });
    }

    // One more than the page is looked at: tells whether a next page exists without a count
    // (`_total=none`, or an estimate above the cap). The page may hold fewer than `_count`
    // matches: SEARCH_PAGE_MAX_BYTES.
    const plan = totalCount(parsed.total, this.settings.searchTotalExactUpTo);
    // no budget left: a page of size 0 still tells whether a match follows (no JSON is read)
    const page = await this.storage.for(ctx).searchPage(version, parsed, {
      within: within?.restriction,
      page:
        maxBytes > 0
          ? { size: parsed.count, maxBytes, references: parsed.include.length > 0 }
          : { size: 0, maxBytes: 0 },
      count: plan.count ? { limit: plan.limit } : undefined,
    });
    // A page that saw the last match tells the total (most patient-scoped searches fit one page).
    const total = !plan.count
      ? undefined
      : page.matchesFromSkip !== undefined
        ? parsed.skip + page.matchesFromSkip
        : totalOf(page.counted ?? 0, plan);
    const { matches, included, cut, truncated, depthCapped } = await this.withIncludes(
      ctx,
      version,
      parsed,
      page.docs,
      base,
      maxBytes,
    );
    const hasNext = page.hasNext || cut;
    const entries: SearchsetEntry[] = [
      ...matches.map((doc) =>
        resourceEntry(base, doc, 'match', shapedResourceJson(version, doc.json ?? '{}', parsed)),
      ),
      ...included.map((doc) => resourceEntry(base, doc, 'include')),
    ];
    if (warnings) entries.push(warnings);
    if (truncated) entries.push(includesTruncatedEntry());
    if (depthCapped) entries.push(includeDepthCappedEntry());
    const links = searchLinks(searchUrl, kept, {
      skip: parsed.skip,
      count: parsed.count,
      total,
      hasNext,
      served: matches.length,
    });
    return this.bundle({ total, links, entries });
  }

  /**
   * The page's `_include` / `_revinclude` additions, held to the same byte budget as the matches
   * (SEARCH_PAGE_MAX_BYTES for matches and additions together): when they do not fit, the page
   * keeps fewer matches (halved, at least one) and so fewer additions; `next` continues after the
   * last match kept. Additions of a single match that still do not fit are served while they fit.
   * The decision is taken on the additions' sizes (IncludeResolver.resolve); only the JSON of
   * those served is read.
   */
  private async withIncludes(
    ctx: TenantContext,
    version: FhirVersion,
    parsed: ParsedSearch,
    docs: ResourceDoc[],
    base: string,
    budget: number,
  ): Promise<{
    matches: ResourceDoc[];
    included: IncludedDoc[];
    cut: boolean;
    truncated: boolean;
    depthCapped: boolean;
  }> {
    const sum = (sizes: readonly number[]) => sizes.reduce((total, size) => total + size, 0);
    let matches = docs;
    for (;;) {
      const { additions, truncated, depthCapped } = await this.includes.resolve(
        ctx,
        version,
        parsed,
        matches,
        base,
        // the targets' JSON once: a page cut in half reads the JSON of what it serves by key
        matches === docs ? budget : undefined,
      );
      const sizes = additions.map((ref) => ref.size);
      const room = budget - sum(matches.map((doc) => doc.json?.length ?? 0));
      if (sum(sizes) > room && matches.length > 1) {
        matches = matches.slice(0, Math.ceil(matches.length / 2));
        continue;
      }
      // additions to matches already served: none when even the first does not fit
      const kept = servedWithinBudget(ctx, sizes, Math.max(0, room), { firstAlways: false });
      const included = await this.includes.read(ctx, version, additions.slice(0, kept));
      return { matches, included, cut: matches.length < docs.length, truncated, depthCapped };
    }
  }

  /**
   * At most `limit` current resources of `type` matching a search, for the conditional
   * interactions (https://hl7.org/fhir/R4/http.html#cond-update): unknown parameters are refused
   * unless `lenient`, as ignoring one could pick the wrong resource.
   */
  async matches(
    ctx: TenantContext,
    version: FhirVersion,
    type: string,
    pairs: SearchPairs,
    options: { limit: number; lenient?: boolean },
  ): Promise<ResourceDoc[]> {
    const parsed = parseOrReject(version, type, pairs, {
      strict: !options.lenient,
      lenient: options.lenient,
      fullTextOff: this.fullTextOff,
      defaultCount: options.limit,
      maxCount: options.limit,
      maxWindow: options.limit,
    });
    // A condition left without criteria (only unknown parameters dropped under lenient handling,
    // or empty values) would match every resource of the type: never widen it to that.
    if (parsed.clauses.length + parsed.chains.length + parsed.has.length + parsed.content.length === 0) {
      const ignored = parsed.unknown.length > 0 ? ` (ignored: ${parsed.unknown.join(', ')})` : '';
      throw OperationOutcomeError.invalid(
        `the condition has no search criteria this server knows${ignored}: nothing was done`,
      );
    }
    normalizeReferenceValues(parsed, this.settings.urls.base);
    return this.storage.for(ctx).searchMatches(version, parsed, options.limit);
  }

  private bundle(input: Parameters<typeof searchsetBundleJson>[0]): Page {
    return page(searchsetBundleJson(input));
  }
}
