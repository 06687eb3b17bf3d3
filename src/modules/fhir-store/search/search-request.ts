import { asOutcomeError } from '../../../storage/search/search-executor';
import {
  parseSearch,
  type FhirVersion,
  type ParsedSearch,
  type ParseSearchOptions,
  type SearchValue,
} from '@app/fhir';
import { LOCAL_REFERENCE } from '@app/fhir/search/index-builder';
import type { SearchPairs } from '../../../fhir-http/search-pairs';

/** Parameters the paging links set themselves (https://hl7.org/fhir/R4/http.html#paging). */
const PAGING_PARAMS = new Set(['_count', '_skip', '_offset']);

/** Why `_content`/`_text` are refused when full text is off (the setting that turns it on). */
export const FULL_TEXT_OFF =
  'full-text search is off on this server (FHIR_FULLTEXT=off; an operator turns it on with FHIR_FULLTEXT=on and `store reindex`)';

/** The pairs repeated on every paging link: everything but the paging parameters themselves. */
export function linkPairs(pairs: SearchPairs): SearchPairs {
  return pairs.filter(([name]) => !PAGING_PARAMS.has(name));
}

/** `parseSearch` with its SearchError turned into the 400 OperationOutcome of the FHIR routes. */
export function parseOrReject(
  version: FhirVersion,
  type: string | undefined,
  pairs: SearchPairs,
  options: ParseSearchOptions,
): ParsedSearch {
  try {
    return parseSearch(version, type, pairs, options);
  } catch (error) {
    throw asOutcomeError(error);
  }
}

/**
 * References written with this server's own base URL (`{base}/{v}/Patient/1`) are the same
 * resource as `Patient/1` (https://hl7.org/fhir/R4/search.html#reference): searched values are made
 * relative, the one form in which the store holds them (the index extraction's `serviceBase`), so
 * a reference search is one equality that the references index reads in lastUpdated order.
 */
export function normalizeReferenceValues(parsed: ParsedSearch, serviceBase: string): void {
  const prefix = `${serviceBase}/${parsed.version}/`;
  const clauses = [
    ...parsed.clauses,
    ...parsed.chains.map((c) => c.clause),
    ...parsed.has.map((h) => h.clause),
  ];
  for (const clause of clauses) {
    if (clause.type !== 'reference' || clause.modifier === 'missing' || clause.modifier === 'identifier')
      continue;
    const values = clause.values.map((value): SearchValue => {
      if (value.kind !== 'reference' || !value.reference.startsWith(prefix)) return value;
      const relative = value.reference.slice(prefix.length);
      return LOCAL_REFERENCE.test(relative) ? { kind: 'reference', reference: relative } : value;
    });
    clause.values = values;
  }
}
