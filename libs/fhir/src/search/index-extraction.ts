import { elementTables, type ElementTable } from '../definitions/element-tables';
import type { FhirVersion } from '../definitions/fhir-version';
import { IndexBuilder } from './index-builder';
import { patientCompartmentKeys } from './patient-compartment-key';
import type { SearchIndex } from './search-index';
import { derivedParams } from './stored-params';
import { compiledParamsFor, type CompiledTypeParams } from './search-parameter-registry';
import type { CompiledExpression, CompiledSearchParam } from './search-parameter-types';
import { textWords } from './text-normalization';

/** Cap on `_content` words per resource: keeps the multikey index bounded for huge documents. */
export const MAX_CONTENT_WORDS = 500;

/**
 * FHIR types whose values are human text. HAPI FHIR builds `_content` from elements of type `string`
 * only (`parseContentTextIntoWords`); `markdown` (Annotation.text in R4, descriptions, comments) is
 * human text too, so it counts here. Every other primitive is a machine value that the token, uri,
 * date or reference parameters already search: `code` (Coding.code, status, gender), `id`, `uri`,
 * dates, numbers, `base64Binary`, and the narrative's `xhtml`.
 */
const TEXT_TYPES = new Set(['string', 'markdown']);

type Json = Record<string, unknown>;

const isObject = (value: unknown): value is Json =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * Words for `_content` (https://hl7.org/fhir/R4/search.html#content): the values of the resource's
 * `string` and `markdown` elements, lower-cased and accent-free, deduplicated, at most
 * MAX_CONTENT_WORDS. The element types come from the version's base definitions (element-tables.ts,
 * the tables the structural validator walks), at every depth: data types (HumanName, Address,
 * CodeableConcept.text, Coding.display, Quantity.unit …), backbone elements, extensions
 * (`valueString`, `valueMarkdown`, also on primitives' `_name` siblings) and nested resources
 * (`contained`, Bundle entries).
 */
export function contentWords(version: FhirVersion, resource: unknown): string[] {
  const tables = elementTables(version);
  // Reference.reference is typed `string` but holds a literal reference (`Patient/1`, a URL), which
  // the reference parameters search; its words would be half of all words (type names and ids).
  const literalReference = tables.table('Reference')?.elements.get('reference');
  const words = new Set<string>();
  /** False once the cap is reached: the walk stops there. */
  const addText = (value: unknown): boolean => {
    if (typeof value !== 'string') return true; // null placeholders of `_name` arrays
    for (const word of textWords(value)) {
      words.add(word);
      if (words.size >= MAX_CONTENT_WORDS) return false;
    }
    return true;
  };
  const visitResource = (value: unknown): boolean => {
    if (!isObject(value) || typeof value.resourceType !== 'string') return true;
    const table = tables.table(value.resourceType);
    return table?.isResource !== true || visitObject(table, value);
  };
  const visitObject = (table: ElementTable, object: Json): boolean => {
    for (const key in object) {
      const value = object[key];
      const rule = table.elements.get(key);
      if (rule === undefined) {
        // `_given`: the id and extensions of a primitive (https://hl7.org/fhir/R4/json.html#primitive).
        const primitive = key.charCodeAt(0) === 95 /* _ */ ? table.elements.get(key.slice(1)) : undefined;
        const extensions = primitive?.isPrimitive ? tables.table(primitive.typeCode) : undefined;
        if (extensions && !visitEach(value, (item) => !isObject(item) || visitObject(extensions, item)))
          return false;
        // An element the definitions do not have is skipped: without a type there is no telling text
        // from a code, and guessing by key names is what the typed walk replaces. The structural
        // validator refuses such elements on every write, so only data stored before a definition
        // change can have one.
        continue;
      }
      if (rule.isPrimitive) {
        // Element.id is typed `string` in STU3 and R4 but is the local target of `#id` references,
        // not text (Resource.id is typed `id`).
        const isText = TEXT_TYPES.has(rule.typeCode) && key !== 'id' && rule !== literalReference;
        if (isText && !visitEach(value, addText)) return false;
      } else if (rule.typeCode === 'Resource') {
        if (!visitEach(value, visitResource)) return false;
      } else {
        const nested = tables.table(rule.tableKey);
        if (nested && !visitEach(value, (item) => !isObject(item) || visitObject(nested, item))) return false;
      }
    }
    return true;
  };
  visitResource(resource);
  return [...words];
}

/** Runs `visit` on a value or on each item of an array, until one returns false. */
function visitEach(value: unknown, visit: (item: unknown) => boolean): boolean {
  if (!Array.isArray(value)) return visit(value);
  for (const item of value) if (!visit(item)) return false;
  return true;
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
  const localPrefix = options.serviceBase === undefined ? undefined : `${options.serviceBase}/${version}/`;
  const builder = new IndexBuilder(localPrefix);
  if (typeof type !== 'string') return builder.build([]);
  const compiled = compiledParamsFor(version, type);
  // Parameters whose values another parameter's entries hold (stored-params.ts) go to a builder of
  // their own (made when one has a value), of which only their presence, sort keys and compartment
  // references are kept.
  const derived = derivedParams(version, type);
  let derivedBuilder: IndexBuilder | undefined;
  const run = (param: CompiledSearchParam, expression: CompiledExpression): void => {
    const target = derived.has(param.code) ? (derivedBuilder ??= new IndexBuilder(localPrefix)) : builder;
    target.add(param, expression, evaluateSafely(expression, resource));
  };
  for (const key of Object.keys(resource)) {
    if (key.charCodeAt(0) === 95 /* _ */) continue;
    const element = elementOfKey(compiled, key);
    if (element === null) continue;
    for (const [param, expression] of compiled.byElement.get(element) ?? []) run(param, expression);
  }
  for (const [param, expression] of compiled.always) run(param, expression);
  if (derivedBuilder) builder.adoptPresenceAndSort(derivedBuilder);
  const index = builder.build(options.fullText ? contentWords(version, resource) : []);
  const compartments = patientCompartmentKeys(version, type, [
    ...builder.references(),
    ...(derivedBuilder?.references() ?? []),
  ]);
  if (compartments.length > 0) index.ref = [...(index.ref ?? []), ...compartments];
  return index;
}
