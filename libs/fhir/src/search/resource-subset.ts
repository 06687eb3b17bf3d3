import type { FhirVersion } from '../definitions/fhir-version';
import { summarySubset } from '../definitions/summary-subset';
import type { ParsedSearch } from './parsed-search';

/**
 * The `_elements` / `_summary` subsets of one resource's JSON (https://hl7.org/fhir/R4/search.html#elements),
 * for search matches and reads alike: pure JSON shaping.
 */

/** Tag a server puts on a resource it did not serve whole (https://hl7.org/fhir/R4/search.html#elements). */
export const SUBSETTED_TAG = {
  system: 'http://terminology.hl7.org/CodeSystem/v3-ObservationValue',
  code: 'SUBSETTED',
};

/** Elements every subset keeps (search.html#elements: id, meta and the mandatory resourceType). */
const ALWAYS_KEPT = new Set(['resourceType', 'id', 'meta']);

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
