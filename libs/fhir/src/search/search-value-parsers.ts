import { parseFhirDateRange } from './fhir-date-range';
import type { SearchPrefix, SearchValue } from './parsed-search';
import { SearchError } from './search-error';
import type { SearchParamType } from './search-parameter-types';

/**
 * Parsing of single search values (https://hl7.org/fhir/R4/search.html): escapes, prefixes,
 * token/quantity pipes, dates and numbers with their implicit precision.
 */

const PREFIXES = new Set<SearchPrefix>(['eq', 'ne', 'gt', 'lt', 'ge', 'le', 'sa', 'eb', 'ap']);

/** Splits on a separator not preceded by a backslash; escapes are kept for a later split. */
export function splitUnescaped(text: string, separator: ',' | '|'): string[] {
  const parts: string[] = [];
  let current = '';
  for (let i = 0; i < text.length; i++) {
    const ch = text[i];
    if (ch === '\\' && i + 1 < text.length) {
      current += ch + text[i + 1];
      i++;
    } else if (ch === separator) {
      parts.push(current);
      current = '';
    } else {
      current += ch;
    }
  }
  parts.push(current);
  return parts;
}

/** `\,` `\|` `\$` `\\` → the literal character (https://hl7.org/fhir/R4/search.html#escaping). */
export function unescapeValue(text: string): string {
  return text.replace(/\\([\\,|$])/g, '$1');
}

function splitPrefix(text: string): { prefix: SearchPrefix; rest: string } {
  const candidate = text.slice(0, 2);
  if (/^[a-z]{2}$/.test(candidate)) {
    if (!PREFIXES.has(candidate as SearchPrefix)) {
      throw new SearchError('invalid', `Unknown search prefix '${candidate}' in '${text}'`);
    }
    return { prefix: candidate as SearchPrefix, rest: text.slice(2) };
  }
  return { prefix: 'eq', rest: text };
}

const NUMBER = /^[+-]?(\d+)(?:\.(\d+))?(?:[eE]([+-]?\d+))?$/;

/** A number and the half-width of its implicit precision ("100" → 0.5, "1.50" → 0.005, "1e2" → 50). */
export function parseDecimal(text: string, name: string): { value: number; lo: number; hi: number } {
  const match = NUMBER.exec(text);
  if (!match) throw new SearchError('invalid', `Invalid number '${text}' for parameter '${name}'`);
  const value = Number(text);
  const decimals = match[2]?.length ?? 0;
  const exponent = match[3] === undefined ? 0 : Number(match[3]);
  const half = 0.5 * 10 ** (exponent - decimals);
  return { value, lo: value - half, hi: value + half };
}

function parseToken(text: string, name: string): SearchValue {
  const parts = splitUnescaped(text, '|');
  if (parts.length > 2) throw new SearchError('invalid', `Malformed token '${text}' for parameter '${name}'`);
  if (parts.length === 1) return { kind: 'token', code: unescapeValue(parts[0]) };
  const [system, code] = parts.map(unescapeValue);
  if (system === '' && code === '')
    throw new SearchError('invalid', `Empty token '|' for parameter '${name}'`);
  return { kind: 'token', system, code: code === '' ? undefined : code };
}

const REFERENCE_ID = /^[A-Za-z0-9\-.]{1,64}$/;
const RELATIVE_REFERENCE = /^([A-Z][A-Za-z]+)\/([A-Za-z0-9\-.]{1,64})(?:\/_history\/[A-Za-z0-9\-.]{1,64})?$/;
const ABSOLUTE = /^[a-z][a-z0-9+.-]*:\S+$/i;

function parseReference(text: string, name: string, modifierType: string | undefined): SearchValue {
  const value = unescapeValue(text);
  if (modifierType) {
    if (!REFERENCE_ID.test(value)) {
      throw new SearchError('invalid', `Invalid id '${value}' for parameter '${name}:${modifierType}'`);
    }
    return { kind: 'reference', reference: `${modifierType}/${value}` };
  }
  const relative = RELATIVE_REFERENCE.exec(value);
  if (relative) return { kind: 'reference', reference: `${relative[1]}/${relative[2]}` };
  if (REFERENCE_ID.test(value) || ABSOLUTE.test(value)) return { kind: 'reference', reference: value };
  throw new SearchError('invalid', `Invalid reference '${value}' for parameter '${name}'`);
}

function parseDate(text: string, name: string): SearchValue {
  const { prefix, rest } = splitPrefix(text);
  const range = parseFhirDateRange(rest);
  if (!range) throw new SearchError('invalid', `Invalid date '${text}' for parameter '${name}'`);
  return { kind: 'date', prefix, lo: range.lo, hi: range.hi };
}

function parseQuantity(text: string, name: string): SearchValue {
  const { prefix, rest } = splitPrefix(text);
  const parts = splitUnescaped(rest, '|');
  if (parts.length !== 1 && parts.length !== 3) {
    throw new SearchError(
      'invalid',
      `Malformed quantity '${text}' for parameter '${name}' (number|system|code)`,
    );
  }
  const number = parseDecimal(parts[0], name);
  const system = parts[1] ? unescapeValue(parts[1]) : undefined;
  const code = parts[2] ? unescapeValue(parts[2]) : undefined;
  return { kind: 'quantity', prefix, ...number, system, code };
}

/** Parses one (comma-split, still escaped) value of a parameter of the given type. */
export function parseSearchValue(
  type: SearchParamType,
  text: string,
  name: string,
  modifierType?: string,
): SearchValue {
  switch (type) {
    case 'string':
      return { kind: 'string', text: unescapeValue(text) };
    case 'token':
      return parseToken(text, name);
    case 'reference':
      return parseReference(text, name, modifierType);
    case 'date':
      return parseDate(text, name);
    case 'number': {
      const { prefix, rest } = splitPrefix(text);
      return { kind: 'number', prefix, ...parseDecimal(rest, name) };
    }
    case 'quantity':
      return parseQuantity(text, name);
    case 'uri':
      return { kind: 'uri', uri: unescapeValue(text) };
    case 'composite':
    case 'special':
      throw new SearchError('not-supported', `Search parameter '${name}' of type ${type} is not supported`);
  }
}

export function parseMissing(text: string, name: string): SearchValue {
  if (text !== 'true' && text !== 'false') {
    throw new SearchError('invalid', `'${name}:missing' takes true or false, not '${text}'`);
  }
  return { kind: 'missing', missing: text === 'true' };
}
