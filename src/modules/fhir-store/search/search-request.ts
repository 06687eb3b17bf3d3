import type { Request } from 'express';
import { asOutcomeError } from '../../../storage/search/search-executor';
import {
  OperationOutcomeError,
  parseSearch,
  type FhirVersion,
  type ParsedSearch,
  type ParseSearchOptions,
  type SearchValue,
} from '@app/fhir';

/**
 * HTTP request → search input. The raw query string is read in order (not Express's parsed object):
 * repeated parameters AND, order is kept for the paging links, and a key such as `name[$gt]` stays
 * the literal, unknown parameter name it is (https://hl7.org/fhir/R4/search.html#combining).
 */
export type SearchPairs = Array<[string, string]>;

/** Parameters the paging links set themselves (https://hl7.org/fhir/R4/http.html#paging). */
const PAGING_PARAMS = new Set(['_count', '_skip', '_offset']);

export function queryPairs(req: Request): SearchPairs {
  const url = req.originalUrl ?? req.url;
  const question = url.indexOf('?');
  return question < 0 ? [] : [...new URLSearchParams(url.slice(question + 1))];
}

/**
 * `POST …/_search`: the form body (application/x-www-form-urlencoded, parsed by the app's body
 * parser into strings or arrays of strings) after the query string. Anything else is refused.
 */
export function formPairs(body: unknown): SearchPairs {
  if (body === undefined || body === null) return [];
  if (typeof body !== 'object' || Array.isArray(body)) {
    throw OperationOutcomeError.invalid('the _search body must be application/x-www-form-urlencoded');
  }
  const pairs: SearchPairs = [];
  for (const [name, value] of Object.entries(body as Record<string, unknown>)) {
    for (const item of Array.isArray(value) ? value : [value]) {
      if (typeof item !== 'string') {
        throw OperationOutcomeError.invalid(`search parameter '${name}' must have a text value`);
      }
      pairs.push([name, item]);
    }
  }
  return pairs;
}

/** `Prefer: handling=strict` turns unknown parameters into a 400 (search.html#errors). */
export function isStrictHandling(prefer: string | undefined): boolean {
  return /(^|[,;\s])handling\s*=\s*strict\b/i.test(prefer ?? '');
}

/** `Prefer: handling=lenient`, asked for explicitly (search.html#errors). */
export function isLenientHandling(prefer: string | undefined): boolean {
  return /(^|[,;\s])handling\s*=\s*lenient\b/i.test(prefer ?? '');
}

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
 * resource as `Patient/1`: searched values are made relative, and each relative value also
 * matches the absolute form a client may have stored (https://hl7.org/fhir/R4/search.html#reference).
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
    const values = clause.values.flatMap((value): SearchValue[] => {
      if (value.kind !== 'reference') return [value];
      const relative = value.reference.startsWith(prefix)
        ? value.reference.slice(prefix.length)
        : value.reference;
      if (!/^[A-Z][A-Za-z]+\/[A-Za-z0-9\-.]{1,64}$/.test(relative)) return [value];
      return [
        { kind: 'reference', reference: relative },
        { kind: 'reference', reference: `${prefix}${relative}` },
      ];
    });
    clause.values = values;
  }
}
