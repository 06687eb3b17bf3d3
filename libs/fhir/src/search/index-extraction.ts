import type { FhirVersion } from '../definitions/fhir-version';
import { IndexBuilder } from './index-builder';
import { patientCompartmentKeys } from './patient-compartment-key';
import type { SearchIndex } from './search-index';
import { compiledParamsFor, type CompiledTypeParams } from './search-parameter-registry';
import type { CompiledExpression, CompiledSearchParam } from './search-parameter-types';
import { textWords } from './text-normalization';

/** Cap on `_content` words per resource: keeps the multikey index bounded for huge documents. */
export const MAX_CONTENT_WORDS = 500;

/** Keys whose string values are identifiers, URLs or markup rather than searchable text. */
const NON_TEXT_KEYS = new Set(['id', 'reference', 'system', 'url', 'fullUrl', 'div', 'data', 'profile']);

const DATE_LIKE = /^\d{4}-\d{2}(-\d{2})?(T|$)/;

/**
 * Words for `_content` (https://hl7.org/fhir/R4/search.html#content): every string value of the
 * resource except identifiers/URLs/narrative markup, lower-cased and accent-free, deduplicated.
 */
export function contentWords(resource: unknown): string[] {
  const words = new Set<string>();
  const visit = (value: unknown): boolean => {
    if (typeof value === 'string') {
      if (DATE_LIKE.test(value)) return true; // dates are searched by date parameters, not words
      for (const word of textWords(value)) {
        words.add(word);
        if (words.size >= MAX_CONTENT_WORDS) return false;
      }
    } else if (Array.isArray(value)) {
      for (const item of value) if (!visit(item)) return false;
    } else if (typeof value === 'object' && value !== null) {
      for (const [key, item] of Object.entries(value)) {
        if (NON_TEXT_KEYS.has(key) || key === 'resourceType' || key.startsWith('_')) continue;
        if (key === 'text' && typeof item === 'object') continue; // the narrative
        if (!visit(item)) return false;
      }
    }
    return true;
  };
  visit(resource);
  return [...words];
}

/** Per type: resource JSON key (`valueQuantity`) → element name parameters start from (`value`). */
const elementOfKeyCache = new WeakMap<CompiledTypeParams, Map<string, string | null>>();

function elementOfKey(compiled: CompiledTypeParams, key: string): string | null {
  let cache = elementOfKeyCache.get(compiled);
  if (!cache) elementOfKeyCache.set(compiled, (cache = new Map()));
  let element = cache.get(key);
  if (element !== undefined) return element;
  element = compiled.byElement.has(key) ? key : null;
  if (element === null) {
    // A choice element: `value` + a type name starting with an upper-case letter.
    for (const candidate of compiled.byElement.keys()) {
      const next = key.charCodeAt(candidate.length);
      if (key.startsWith(candidate) && next >= 65 && next <= 90) element = candidate;
    }
  }
  cache.set(key, element);
  return element;
}

function evaluateSafely(expression: CompiledExpression, resource: unknown): unknown[] {
  try {
    return expression.evaluate(resource);
  } catch {
    // A resource the validator let through but fhirpath.js cannot walk must not fail the write.
    return [];
  }
}

export interface ExtractIndexOptions {
  /**
   * `_content` words (`txt`) too: the deployment's full-text setting. Off, a resource has no words
   * (its largest share of index entries; the search answers `_content` with an error instead).
   */
  fullText: boolean;
  /**
   * This server's base URL (`https://host`, no trailing slash): a reference written with it
   * (`{base}/{version}/Patient/1`) is the same resource as `Patient/1` and is stored in that one
   * relative form, so a reference search is one equality (docs/storage.md "Sorted pages").
   */
  serviceBase?: string;
}

/**
 * Index entries of one resource (written at create/update, stored as `idx`, see search-index.ts).
 * Only the parameters whose first element is present in the resource are evaluated: most
 * parameters of a type are absent from any one resource, which is where the time goes.
 */
export function extractIndex(
  version: FhirVersion,
  resource: Record<string, unknown>,
  options: ExtractIndexOptions = { fullText: true },
): SearchIndex {
  const type = resource.resourceType;
  const builder = new IndexBuilder(
    options.serviceBase === undefined ? undefined : `${options.serviceBase}/${version}/`,
  );
  if (typeof type !== 'string') return builder.build([]);
  const compiled = compiledParamsFor(version, type);
  const run = (param: CompiledSearchParam, expression: CompiledExpression): void =>
    builder.add(param, expression, evaluateSafely(expression, resource));
  for (const key of Object.keys(resource)) {
    if (key.charCodeAt(0) === 95 /* _ */) continue;
    const element = elementOfKey(compiled, key);
    if (element === null) continue;
    for (const [param, expression] of compiled.byElement.get(element) ?? []) run(param, expression);
  }
  for (const [param, expression] of compiled.always) run(param, expression);
  const index = builder.build(options.fullText ? contentWords(resource) : []);
  const compartments = index.ref ? patientCompartmentKeys(version, type, index.ref) : [];
  if (compartments.length > 0) index.ref = [...index.ref!, ...compartments];
  return index;
}
