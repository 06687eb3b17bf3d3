import type { FhirVersion } from '../definitions/fhir-version';
import { isResourceType } from '../definitions/resource-types';
import type {
  ParsedSearch,
  ParseSearchOptions,
  SearchClause,
  SearchModifier,
  SearchValue,
} from './parsed-search';
import {
  parseChoice,
  parseElements,
  parseInclude,
  parseNonNegativeInteger,
  parseSort,
  parseTypes,
} from './result-parameters';
import { rewriteResolve } from './fhirpath-expressions';
import { SearchError } from './search-error';
import { searchDefinitions, searchParamDefinition } from './search-parameter-registry';
import type { SearchParamDefinition, SearchParamType } from './search-parameter-types';
import { parseMissing, parseSearchValue, splitUnescaped } from './search-value-parsers';
import { textWords } from './text-normalization';

/**
 * Query parameters → ParsedSearch, the intermediate form the filter builder turns into MongoDB
 * filters (FHIR R4 search, https://hl7.org/fhir/R4/search.html). Every error is a SearchError.
 */

export type SearchQueryInput = Array<[string, string]> | Record<string, unknown>;

const DEFAULTS = { defaultCount: 10, maxCount: 100, maxWindow: 10_000 };
/** Full-text search parameters (https://hl7.org/fhir/R4/search.html#content): a deployment's option. */
const FULL_TEXT_PARAMS = new Set(['_content', '_text']);
/**
 * Values one search parameter may list (`code=a,b,…`, OR), and all parameters of a search
 * together: each is a condition (an index range, or a regex for prefixes) the engine tests, and
 * an `$or` of a thousand prefix regexes took it 2 s per page while it answered almost nothing.
 * Over either → 400 too-costly naming the limit (docs/security.md "Database work").
 */
export const MAX_VALUES_PER_PARAMETER = 100;
export const MAX_VALUES_PER_SEARCH = 500;
/** Parameters that shape the HTTP response, not the search: accepted and ignored here. */
const IGNORED = new Set(['_format', '_pretty', '_debug']);

const MODIFIERS_BY_TYPE: Readonly<Record<SearchParamType, readonly string[]>> = {
  string: ['exact', 'contains', 'missing'],
  token: ['not', 'text', 'missing'],
  reference: ['missing', 'identifier'],
  date: ['missing'],
  number: ['missing'],
  quantity: ['missing'],
  uri: ['below', 'above', 'missing'],
  composite: [],
  special: [],
};
const UNSUPPORTED_MODIFIERS = new Set(['in', 'not-in', 'of-type', 'iterate', 'recurse']);

/**
 * Characters no FHIR string holds (https://hl7.org/fhir/R4/datatypes.html#string): a search for
 * them matches nothing, and NUL cannot even travel to every engine inside a regex.
 */
// eslint-disable-next-line no-control-regex -- finding control characters is the point
const CONTROL = /[\u0000-\u0008\u000B\u000C\u000E-\u001F]/;
// eslint-disable-next-line no-control-regex -- the same, to mask them in the message
const CONTROL_ALL = /[\u0000-\u001F]/g;

/**
 * The longest single search value (between commas). Values become index keys and anchored
 * patterns: the cap keeps every pattern far below what a database engine compiles (a longer string
 * could not match anyway: indexed strings are cut at MAX_INDEXED_STRING_LENGTH).
 */
export const MAX_SEARCH_VALUE_LENGTH = 1024;

/** Flattens the accepted input shapes; anything but strings (e.g. qs objects) is refused. */
function toPairs(params: SearchQueryInput): Array<[string, string]> {
  const entries: Array<[string, unknown]> = Array.isArray(params) ? params : Object.entries(params);
  const pairs: Array<[string, string]> = [];
  for (const [name, value] of entries) {
    const values = Array.isArray(value) ? (value as unknown[]) : [value];
    for (const item of values) {
      if (typeof item !== 'string') {
        throw new SearchError('invalid', `Search parameter '${String(name)}' must have a text value`);
      }
      const control = CONTROL.exec(`${String(name)}${item}`);
      if (control) {
        const code = control[0].charCodeAt(0).toString(16).toUpperCase().padStart(4, '0');
        throw new SearchError(
          'invalid',
          `Search parameter '${String(name).replace(CONTROL_ALL, '?')}' contains the control character U+${code}, which no FHIR string holds`,
        );
      }
      const long = splitUnescaped(item, ',').find((one) => one.length > MAX_SEARCH_VALUE_LENGTH);
      if (long !== undefined) {
        throw new SearchError(
          'too-costly',
          `A value of search parameter '${String(name)}' is ${long.length} characters long; at most ${MAX_SEARCH_VALUE_LENGTH} (the limit)`,
        );
      }
      pairs.push([String(name), item]);
    }
  }
  return pairs;
}

/** MAX_VALUES_PER_PARAMETER and MAX_VALUES_PER_SEARCH, counted on the unescaped commas. */
function checkValueCounts(pairs: ReadonlyArray<[string, string]>): void {
  let total = 0;
  for (const [name, value] of pairs) {
    if (IGNORED.has(name)) continue;
    const count = splitValues(value).length;
    total += count;
    if (count > MAX_VALUES_PER_PARAMETER) {
      throw new SearchError(
        'too-costly',
        `'${name}' lists ${count} values; at most ${MAX_VALUES_PER_PARAMETER} per parameter`,
      );
    }
  }
  if (total > MAX_VALUES_PER_SEARCH) {
    throw new SearchError(
      'too-costly',
      `the search lists ${total} values over all its parameters; at most ${MAX_VALUES_PER_SEARCH}`,
    );
  }
}

function splitValues(text: string): string[] {
  return splitUnescaped(text, ',').filter((value) => value.length > 0);
}

function lookup(version: FhirVersion, types: readonly string[] | undefined, code: string) {
  if (!types || types.length === 0) return searchDefinitions(version).common.get(code);
  const definitions = types.map((type) => searchParamDefinition(version, type, code));
  const first = definitions[0];
  // A system search over several types only takes parameters every one of them defines alike.
  return first && definitions.every((definition) => definition?.type === first.type) ? first : undefined;
}

/** One parameter occurrence (`name[:modifier]=v1,v2`) on a resolved definition → a clause. */
function buildClause(
  version: FhirVersion,
  definition: SearchParamDefinition,
  rawModifier: string | undefined,
  text: string,
): SearchClause | undefined {
  const name = definition.code;
  let modifier: SearchModifier | undefined;
  let modifierType: string | undefined;
  if (rawModifier !== undefined) {
    if (definition.type === 'reference' && isResourceType(version, rawModifier)) {
      if (definition.targets.length > 0 && !definition.targets.includes(rawModifier)) {
        throw new SearchError('invalid', `'${name}' cannot refer to ${rawModifier}`);
      }
      modifier = 'type';
      modifierType = rawModifier;
    } else if (MODIFIERS_BY_TYPE[definition.type].includes(rawModifier)) {
      modifier = rawModifier as SearchModifier;
    } else if (UNSUPPORTED_MODIFIERS.has(rawModifier) || rawModifier === 'below' || rawModifier === 'above') {
      throw new SearchError('not-supported', `Modifier ':${rawModifier}' is not supported on '${name}'`);
    } else {
      throw new SearchError(
        'invalid',
        `Unknown modifier ':${rawModifier}' on ${definition.type} parameter '${name}'`,
      );
    }
  }
  const texts = splitValues(text);
  if (texts.length === 0) return undefined; // empty values are ignored (search.html#3.1.1.3)
  const values: SearchValue[] = texts.map((value) => {
    if (modifier === 'missing') return parseMissing(value, name);
    if (modifier === 'text') return { kind: 'string', text: value };
    if (modifier === 'identifier') return parseSearchValue('token', value, name);
    return parseSearchValue(definition.type, value, name, modifierType);
  });
  return {
    param: name,
    type: definition.type,
    modifier,
    modifierType,
    targets: storedTargets(definition),
    values,
  };
}

/**
 * The types a reference parameter's index entries can name: where every expression selects one
 * type (`Condition.subject.where(resolve() is Patient)`, the parameter's targets Patient and Group),
 * the extraction stores references of those types only (index-builder.ts), so a bare id
 * (`Condition?patient=1`) is looked up as `Patient/1` alone: one equality, one ordered scan.
 */
function storedTargets(definition: SearchParamDefinition): readonly string[] {
  if (definition.type !== 'reference' || definition.expressions.length === 0) return definition.targets;
  const selected = new Set<string>();
  for (const expression of definition.expressions) {
    const targetType = rewriteResolve(expression)?.targetType;
    if (targetType === undefined) return definition.targets;
    selected.add(targetType);
  }
  const open = definition.targets.length === 0 || definition.targets.includes('Resource');
  return open ? [...selected] : definition.targets.filter((target) => selected.has(target));
}

const ID_DEFINITION: SearchParamDefinition = { code: '_id', type: 'token', targets: [], expressions: [] };
const LAST_UPDATED_DEFINITION: SearchParamDefinition = {
  code: '_lastUpdated',
  type: 'date',
  targets: [],
  expressions: [],
};

const ID_VALUE = /^[A-Za-z0-9\-.]{1,64}$/;

export function parseSearch(
  version: FhirVersion,
  type: string | undefined,
  params: SearchQueryInput,
  options: ParseSearchOptions = {},
): ParsedSearch {
  const settings = { ...DEFAULTS, ...options };
  if (type !== undefined && !isResourceType(version, type)) {
    throw new SearchError('invalid', `Unknown resource type '${type}'`);
  }
  const pairs = toPairs(params);
  checkValueCounts(pairs);
  const parsed: ParsedSearch = {
    version,
    type,
    clauses: [],
    content: [],
    chains: [],
    has: [],
    count: settings.defaultCount,
    skip: 0,
    sort: [],
    include: [],
    revinclude: [],
    unknown: [],
  };
  const typeValue = pairs.find(([name]) => name === '_type')?.[1];
  if (typeValue !== undefined && type === undefined) parsed.types = parseTypes(version, typeValue);
  const scope = type ? [type] : parsed.types;
  let sortText: string | undefined;

  for (const [name, value] of pairs) {
    const [base, ...modifiers] = name.split(':');
    if (settings.fullTextOff !== undefined && FULL_TEXT_PARAMS.has(base)) {
      // Silently ignoring them would answer every resource of the type: only when asked for.
      if (!settings.lenient) throw new SearchError('not-supported', `${base}: ${settings.fullTextOff}`);
      parsed.unknown.push(name);
      continue;
    }
    switch (base) {
      case '_count':
        parsed.count = Math.min(parseNonNegativeInteger('_count', value), settings.maxCount);
        continue;
      case '_skip':
      case '_offset':
        parsed.skip = parseNonNegativeInteger(base, value);
        continue;
      case '_sort':
        sortText = value;
        continue;
      case '_total':
        parsed.total = parseChoice('_total', value, ['accurate', 'none', 'estimate'] as const);
        continue;
      case '_summary':
        parsed.summary = parseChoice('_summary', value, ['true', 'false', 'text', 'data', 'count'] as const);
        continue;
      case '_elements':
        parsed.elements = parseElements(value);
        continue;
      case '_include':
      case '_revinclude': {
        const iterate = modifiers.length === 1 && (modifiers[0] === 'iterate' || modifiers[0] === 'recurse');
        if (modifiers.length > 0 && !iterate) throw new SearchError('invalid', `Unknown modifier on ${name}`);
        const target = base === '_include' ? parsed.include : parsed.revinclude;
        target.push(parseInclude(version, base, value, iterate));
        continue;
      }
      case '_type':
        if (type !== undefined) throw new SearchError('invalid', '_type is only allowed in a system search');
        continue;
      case '_content': {
        const alternatives = splitValues(value).map((text) => {
          const words = textWords(text);
          // dropping it would widen the search to every resource (or every other alternative)
          if (words.length === 0)
            throw new SearchError(
              'invalid',
              `_content '${text}' holds no searchable word (of 2 letters or more)`,
            );
          return words;
        });
        if (alternatives.length > 0) parsed.content.push(alternatives);
        continue;
      }
      case '_id': {
        if (modifiers.length > 0) throw new SearchError('invalid', `Unknown modifier on ${name}`);
        const ids = splitValues(value);
        const invalid = ids.find((id) => !ID_VALUE.test(id));
        if (invalid !== undefined) throw new SearchError('invalid', `Invalid _id '${invalid}'`);
        if (ids.length > 0) {
          parsed.clauses.push({
            ...clauseBase(ID_DEFINITION),
            values: ids.map((code) => ({ kind: 'token', code })),
          });
        }
        continue;
      }
      case '_lastUpdated': {
        const clause = buildClause(version, LAST_UPDATED_DEFINITION, modifiers[0], value);
        if (modifiers.length > 1 || modifiers[0] === 'missing')
          throw new SearchError('invalid', `Invalid ${name}`);
        if (clause) parsed.clauses.push(clause);
        continue;
      }
      case '_has':
        parsed.has.push(parseHas(version, type, name, value));
        continue;
      default:
        if (IGNORED.has(base)) continue;
    }
    parseParameter(version, scope, parsed, name, value, settings.strict === true);
  }

  if (parsed.skip + parsed.count > settings.maxWindow) {
    throw new SearchError(
      'too-costly',
      `_skip ${parsed.skip} + _count ${parsed.count} reaches beyond the first ${settings.maxWindow} results; narrow the search`,
    );
  }
  if (sortText !== undefined) parsed.sort = parseSort(version, type ?? scope?.[0], sortText);
  return parsed;
}

function clauseBase(definition: SearchParamDefinition): Omit<SearchClause, 'values'> {
  return { param: definition.code, type: definition.type, targets: definition.targets };
}

/** A regular or chained parameter (`name[:modifier]` or `ref[:Type].name[:modifier]`). */
function parseParameter(
  version: FhirVersion,
  scope: readonly string[] | undefined,
  parsed: ParsedSearch,
  name: string,
  value: string,
  strict: boolean,
): void {
  const dot = name.indexOf('.');
  const head = dot < 0 ? name : name.slice(0, dot);
  const [code, modifier, ...extra] = head.split(':');
  const definition = /^[A-Za-z_][A-Za-z0-9_-]*$/.test(code) ? lookup(version, scope, code) : undefined;
  if (!definition || extra.length > 0) {
    if (strict) throw new SearchError('not-supported', `Unknown search parameter '${name}'`);
    parsed.unknown.push(name);
    return;
  }
  if (dot < 0) {
    const clause = buildClause(version, definition, modifier, value);
    if (clause) parsed.clauses.push(clause);
    return;
  }
  // Chaining, one level (https://hl7.org/fhir/R4/search.html#chaining).
  if (definition.type !== 'reference')
    throw new SearchError('invalid', `'${code}' is not a reference: cannot chain`);
  const rest = name.slice(dot + 1);
  if (rest.includes('.'))
    throw new SearchError('not-supported', `Chains deeper than one level are not supported`);
  const [chainedCode, chainedModifier, ...chainedExtra] = rest.split(':');
  const candidates =
    modifier !== undefined ? [modifier] : definition.targets.filter((target) => target !== 'Resource');
  if (modifier !== undefined && (!isResourceType(version, modifier) || chainedExtra.length > 0)) {
    throw new SearchError('invalid', `Invalid chained parameter '${name}'`);
  }
  const targetTypes = candidates.filter((target) => searchParamDefinition(version, target, chainedCode));
  const chained =
    targetTypes.length > 0 ? searchParamDefinition(version, targetTypes[0], chainedCode) : undefined;
  if (!chained) {
    throw new SearchError(
      'invalid',
      `Unknown chained parameter '${chainedCode}' on ${candidates.join('/') || 'target'}`,
    );
  }
  const clause = buildClause(version, chained, chainedModifier, value);
  if (clause) parsed.chains.push({ referenceParam: code, targetTypes, clause });
}

/** `_has:Type:ref:param[:modifier]=value` (reverse chaining, one level). */
function parseHas(version: FhirVersion, type: string | undefined, name: string, value: string) {
  const [, sourceType, referenceParam, code, modifier, ...extra] = name.split(':');
  if (!type || !sourceType || !referenceParam || !code || extra.length > 0) {
    throw new SearchError(
      'invalid',
      `Invalid _has parameter '${name}' (expected _has:Type:reference:parameter)`,
    );
  }
  if (code === '_has') throw new SearchError('not-supported', 'Nested _has is not supported');
  if (!isResourceType(version, sourceType))
    throw new SearchError('invalid', `Unknown type '${sourceType}' in ${name}`);
  const reference = searchParamDefinition(version, sourceType, referenceParam);
  if (reference?.type !== 'reference') {
    throw new SearchError('invalid', `'${referenceParam}' is not a reference parameter of ${sourceType}`);
  }
  const definition = searchParamDefinition(version, sourceType, code);
  if (!definition)
    throw new SearchError('invalid', `Unknown parameter '${code}' of ${sourceType} in ${name}`);
  const clause = buildClause(version, definition, modifier, value);
  if (!clause) throw new SearchError('invalid', `${name} needs a value`);
  return { sourceType, referenceParam, clause };
}
