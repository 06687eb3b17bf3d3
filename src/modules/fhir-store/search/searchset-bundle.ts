import { randomUUID } from 'node:crypto';
import { issue, operationOutcome, type BundleLink, type SearchsetEntry } from '@app/fhir';
import type { ResourceDoc } from '../../../storage/documents';
import type { SearchPairs } from '../../../fhir-http/search-pairs';

/**
 * Searchset Bundle pieces (docs/api.md §6, https://hl7.org/fhir/R4/bundle.html#searchset): absolute
 * paging links, `fullUrl`s and `search.mode`; the `_elements` / `_summary` subsets are libs/fhir's
 * (`shapedResourceJson`).
 */

export interface PageWindow {
  skip: number;
  count: number;
  /** Matches in all (undefined with `_total=none`, or past the cap of an estimate: search-total.ts). */
  total?: number;
  /** Whether a later page exists (known without a total by fetching one more). */
  hasNext: boolean;
  /**
   * Matches on this page when fewer than `count` were served although more exist (the page
   * reached SEARCH_PAGE_MAX_BYTES): `next` continues right after them. A server may return fewer
   * resources than `_count` asks (https://hl7.org/fhir/R4/search.html#count).
   */
  served?: number;
}

/**
 * self/first/previous/next/last, each with the search's own parameters and `_count`/`_skip`.
 * `last` needs the exact total: it is left out whenever the total is (`_total=none`, an estimate past its cap).
 */
export function searchLinks(searchUrl: string, pairs: SearchPairs, page: PageWindow): BundleLink[] {
  const url = (skip: number): string => {
    const params = new URLSearchParams([...pairs, ['_count', String(page.count)], ['_skip', String(skip)]]);
    return `${searchUrl}?${params.toString()}`;
  };
  const links: BundleLink[] = [
    { relation: 'self', url: url(page.skip) },
    { relation: 'first', url: url(0) },
  ];
  if (page.skip > 0 && page.count > 0)
    links.push({ relation: 'previous', url: url(Math.max(0, page.skip - page.count)) });
  if (page.count > 0 && page.hasNext)
    links.push({ relation: 'next', url: url(page.skip + (page.served ?? page.count)) });
  if (page.total !== undefined) {
    const last =
      page.total === 0 || page.count === 0 ? 0 : Math.floor((page.total - 1) / page.count) * page.count;
    links.push({ relation: 'last', url: url(last) });
  }
  return links;
}

export function resourceEntry(
  serviceBase: string,
  doc: Pick<ResourceDoc, 'v' | 't' | 'id' | 'json'>,
  mode: 'match' | 'include',
  json = doc.json ?? '{}',
): SearchsetEntry {
  return { fullUrl: `${serviceBase}/${doc.v}/${doc.t}/${doc.id}`, resourceJson: json, mode };
}

/** Unknown parameters, ignored but reported (search.html#errors): one OperationOutcome entry, mode outcome. */
export function unknownParamsEntry(unknown: readonly string[]): SearchsetEntry | undefined {
  if (unknown.length === 0) return undefined;
  const outcome = operationOutcome(
    unknown.map((name) =>
      issue(
        'not-supported',
        `Unknown search parameter '${name}': ignored (send Prefer: handling=strict to refuse)`,
        {
          severity: 'warning',
        },
      ),
    ),
  );
  return { fullUrl: `urn:uuid:${randomUUID()}`, resource: outcome, mode: 'outcome' };
}
