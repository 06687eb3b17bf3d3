import { randomUUID } from 'node:crypto';
import {
  issue,
  operationOutcome,
  summarySubset,
  type BundleLink,
  type FhirVersion,
  type ParsedSearch,
  type SearchsetEntry,
} from '@app/fhir';
import type { ResourceDoc } from '../../../storage/documents';
import type { SearchPairs } from './search-request';

/**
 * Searchset Bundle pieces (docs/api.md §6, https://hl7.org/fhir/R4/bundle.html#searchset): absolute
 * paging links, `fullUrl`s, `search.mode`, and the `_elements` / `_summary` subsets.
 */

/** Tag a server puts on a resource it did not serve whole (https://hl7.org/fhir/R4/search.html#elements). */
export const SUBSETTED_TAG = {
  system: 'http://terminology.hl7.org/CodeSystem/v3-ObservationValue',
  code: 'SUBSETTED',
};

/** Elements every subset keeps (search.html#elements: id, meta and the mandatory resourceType). */
const ALWAYS_KEPT = new Set(['resourceType', 'id', 'meta']);

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

function withSubsettedTag(resource: Record<string, unknown>): Record<string, unknown> {
  const meta = { ...((resource.meta as Record<string, unknown> | undefined) ?? {}) };
  const tags = Array.isArray(meta.tag) ? [...(meta.tag as unknown[])] : [];
  tags.push(SUBSETTED_TAG);
  meta.tag = tags;
  return { ...resource, meta };
}

/**
 * The served JSON of a match after `_elements` (listed top-level elements, `Type.element` for
 * the matching type) or `_summary=true|text|data`. Untouched (no parse) when neither applies.
 */
export function shapedResourceJson(
  version: FhirVersion,
  json: string,
  parsed: Pick<ParsedSearch, 'elements' | 'summary'>,
): string {
  const { elements, summary } = parsed;
  if (!elements && summary !== 'text' && summary !== 'data' && summary !== 'true') return json;
  const resource = JSON.parse(json) as Record<string, unknown>;
  const type = String(resource.resourceType);
  let kept: Record<string, unknown>;
  if (elements) {
    const wanted = new Set(
      elements.flatMap((element) => {
        const dot = element.indexOf('.');
        if (dot < 0) return [element];
        return element.slice(0, dot) === type ? [element.slice(dot + 1)] : [];
      }),
    );
    kept = Object.fromEntries(
      Object.entries(resource).filter(([key]) => ALWAYS_KEPT.has(key) || wanted.has(key.replace(/^_/, ''))),
    );
  } else if (summary === 'true') {
    const subset = summarySubset(version, resource);
    if (!subset) return json;
    kept = subset;
  } else if (summary === 'text') {
    kept = Object.fromEntries(
      Object.entries(resource).filter(([key]) => ALWAYS_KEPT.has(key) || key === 'text'),
    );
  } else {
    kept = Object.fromEntries(Object.entries(resource).filter(([key]) => key !== 'text'));
  }
  return JSON.stringify(withSubsettedTag(kept));
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
