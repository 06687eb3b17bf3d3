import type { FhirVersion } from '../definitions/fhir-version';
import { structureDefinitions } from '../definitions/structure-definitions';
import { checkNarrative } from './narrative';
import type { ValidationIssueCode } from './validation-issue';

/** What is wrong with a primitive value, or undefined when it is fine. */
export interface PrimitiveProblem {
  readonly code: ValidationIssueCode;
  readonly message: string;
  /** The invariant broken, for narrative problems (txt-1, txt-2). */
  readonly rule?: string;
}

export type PrimitiveCheck = (value: unknown) => PrimitiveProblem | undefined;

/**
 * Regexes for primitives whose StructureDefinition has none (STU3 leaves several out), taken from the
 * data type pages, e.g. https://hl7.org/fhir/STU3/datatypes.html#string.
 */
const FALLBACK_REGEX: Readonly<Record<string, string>> = {
  string: '[ \\r\\n\\t\\S]+',
  markdown: '[ \\r\\n\\t\\S]+',
  uri: '\\S*',
  url: '\\S*',
  canonical: '\\S*',
  id: '[A-Za-z0-9\\-\\.]{1,64}',
  code: '[^\\s]+(\\s[^\\s]+)*',
};

/**
 * Published regexes that backtrack exponentially on some inputs, replaced by ones matching the same
 * language in linear time. STU3 `code` is `[^\s]+([\s]?[^\s]+)*` (nested quantifiers); the R4 form
 * describes the same set of strings. A client must not be able to stall ingest with one crafted value.
 */
const SAFE_REGEX_OVERRIDES: Readonly<Record<string, string>> = {
  code: '[^\\s]+(\\s[^\\s]+)*',
};

/** FHIR strings SHALL NOT exceed 1 MB (https://hl7.org/fhir/R4/datatypes.html#string). */
const MAX_STRING_LENGTH = 1024 * 1024;
const MAX_ID_LENGTH = 64;
const INT32_MIN = -2147483648;
const INT32_MAX = 2147483647;

/** https://hl7.org/fhir/R4/datatypes.html#string: characters below U+0020 other than tab, CR and LF are not allowed. */
// eslint-disable-next-line no-control-regex
const CONTROL_CHARACTER = /[\u0000-\u0008\u000B\u000C\u000E-\u001F]/;

/** Invalid UTF-8 arrives as U+FFFD; `\ud800` escapes in JSON arrive as unpaired surrogates. */
const SURROGATE = /[\uD800-\uDFFF]/;
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

const INTEGER_MINIMUM: Readonly<Record<string, number>> = {
  integer: INT32_MIN,
  unsignedInt: 0,
  positiveInt: 1,
};

const checksByVersion = new Map<FhirVersion, Map<string, PrimitiveCheck>>();

/** The check for a primitive type code of a version, compiled once from its StructureDefinition. */
export function primitiveCheck(version: FhirVersion, typeCode: string): PrimitiveCheck {
  let checks = checksByVersion.get(version);
  if (!checks) checksByVersion.set(version, (checks = new Map()));
  let check = checks.get(typeCode);
  if (!check) {
    const published = structureDefinitions(version).byType.get(typeCode)?.valueRegex;
    check = compileCheck(typeCode, SAFE_REGEX_OVERRIDES[typeCode] ?? published ?? FALLBACK_REGEX[typeCode]);
    checks.set(typeCode, check);
  }
  return check;
}

function compileCheck(typeCode: string, regexSource: string | undefined): PrimitiveCheck {
  switch (typeCode) {
    case 'boolean':
      return (value) => (typeof value === 'boolean' ? undefined : wrongJsonType(value, 'a boolean'));
    case 'decimal':
      return (value) =>
        typeof value === 'number' && Number.isFinite(value) ? undefined : wrongJsonType(value, 'a number');
    case 'integer':
    case 'unsignedInt':
    case 'positiveInt':
      return integerCheck(typeCode, INTEGER_MINIMUM[typeCode] ?? INT32_MIN);
    case 'base64Binary':
      return stringCheck(typeCode, isBase64);
    case 'xhtml':
      return narrativeCheck;
    default:
      break;
  }
  const regex = regexSource === undefined ? undefined : new RegExp(`^(?:${toJavaScriptRegex(regexSource)})$`);
  const maxLength = typeCode === 'id' ? MAX_ID_LENGTH : MAX_STRING_LENGTH;
  const matches = regex ? (text: string) => regex.test(text) : () => true;
  // The published regexes allow 2019-02-30; the calendar does not (month lengths, leap years).
  let isWellFormed = matches;
  if (DATE_TYPES.has(typeCode)) isWellFormed = (text) => matches(text) && isCalendarDate(text);
  else if (URI_TYPES.has(typeCode)) isWellFormed = (text) => matches(text) && isWellFormedUri(typeCode, text);
  else if (typeCode === 'code') isWellFormed = (text) => matches(text) && hasOnlySingleSpaces(text);
  return stringCheck(typeCode, isWellFormed, maxLength);
}

const DATE_TYPES = new Set(['date', 'dateTime', 'instant']);
const URI_TYPES = new Set(['uri', 'url', 'canonical', 'oid', 'uuid']);
const OID_URN = /^urn:oid:[0-2](\.(0|[1-9][0-9]*))+$/;
const UUID_URN = /^urn:uuid:[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/**
 * `urn:oid:` and `urn:uuid:` values follow their RFCs (lower-case UUIDs), and a canonical is absolute
 * unless it is a `#fragment` (https://hl7.org/fhir/R4/datatypes.html#canonical).
 */
function isWellFormedUri(typeCode: string, text: string): boolean {
  if (text.startsWith('urn:oid:')) return OID_URN.test(text);
  if (text.startsWith('urn:uuid:')) return UUID_URN.test(text);
  if (typeCode === 'canonical') return text.startsWith('#') || /^[A-Za-z][A-Za-z0-9+.-]*:/.test(text);
  return true;
}

/**
 * Whitespace other than a single inner space: Unicode's White_Space characters as the reference
 * validator lists them (U+000B and U+000C are control characters, refused before this check).
 */
const UNICODE_WHITESPACE = /[\t\n\r\u0085\u00A0\u1680\u2000-\u200A\u2028\u2029\u202F\u205F\u3000]|^ | $| {2}/;

/**
 * A code has "no leading or trailing whitespace, and no whitespace other than single spaces in the
 * contents" (https://hl7.org/fhir/R4/datatypes.html#code). The published regex reads whitespace as
 * XML Schema's four characters, so it lets `"CHEST\u00A0"` or a tab between words through; the text
 * means any whitespace, as the reference validator reads it.
 */
function hasOnlySingleSpaces(text: string): boolean {
  return !UNICODE_WHITESPACE.test(text);
}

/** Whether the `YYYY-MM-DD` part (if any) names a real day: no 30 February, no 31 April. */
export function isCalendarDate(text: string): boolean {
  if (text.length < 10 || text.charCodeAt(7) !== 0x2d) return true;
  const offset = text.charCodeAt(0) === 0x2d ? 1 : 0;
  const year = Number(text.slice(offset, offset + 4));
  const month = Number(text.slice(offset + 5, offset + 7));
  const day = Number(text.slice(offset + 8, offset + 10));
  return day >= 1 && day <= daysInMonth(year, month);
}

function daysInMonth(year: number, month: number): number {
  if (month === 2) return (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0 ? 29 : 28;
  return month === 4 || month === 6 || month === 9 || month === 11 ? 30 : 31;
}

/** Narrative.div: https://hl7.org/fhir/R4/narrative.html#xhtml, checked by a real XML parse. */
const narrativeCheck: PrimitiveCheck = (value) => {
  const basic = stringCheck('xhtml', () => true)(value);
  if (basic || typeof value !== 'string') return basic;
  const found = checkNarrative(value);
  return found ? { code: 'value', message: found.message, rule: found.rule } : undefined;
};

function stringCheck(
  typeCode: string,
  isWellFormed: (text: string) => boolean,
  maxLength = Number.POSITIVE_INFINITY,
): PrimitiveCheck {
  return (value) => {
    if (typeof value !== 'string') return wrongJsonType(value, 'a string');
    if (value.length === 0) return { code: 'value', message: `Empty string is not a valid ${typeCode}` };
    if (value.length > maxLength) {
      return { code: 'too-long', message: `A ${typeCode} is at most ${maxLength} characters long` };
    }
    if (CONTROL_CHARACTER.test(value) || (SURROGATE.test(value) && LONE_SURROGATE.test(value))) {
      return {
        code: 'value',
        message: `A ${typeCode} must not hold control characters (other than tab, CR, LF) or broken UTF-16`,
      };
    }
    if (!isWellFormed(value))
      return { code: 'value', message: `${describe(value)} is not a valid ${typeCode}` };
    return undefined;
  };
}

function integerCheck(typeCode: string, minimum: number): PrimitiveCheck {
  return (value) => {
    if (typeof value !== 'number') return wrongJsonType(value, 'a number');
    if (!Number.isInteger(value) || value < minimum || value > INT32_MAX) {
      return { code: 'value', message: `${value} is not a valid ${typeCode} (${minimum}..${INT32_MAX})` };
    }
    return undefined;
  };
}

/** XML Schema whitespace (https://www.w3.org/TR/xmlschema-2/#charcter-classes): space, tab, LF, CR. */
const XSD_SPACE = ' \\t\\n\\r';
const XSD_NON_SPACE = '\\u0000-\\u0008\\u000B\\u000C\\u000E-\\u001F\\u0021-\\uFFFF';

/**
 * FHIR regexes follow XML Schema, where `\s` is only space/tab/LF/CR; in JavaScript `\s` also matches
 * Unicode spaces such as U+00A0, which would reject valid strings like "CHEST\u00A0" (a `code` is
 * held to the data type's text besides, see hasOnlySingleSpaces). Rewrites `\s`/`\S`
 * inside and outside character classes to the XML Schema meaning.
 */
export function toJavaScriptRegex(source: string): string {
  let result = '';
  let inClass = false;
  for (let i = 0; i < source.length; i++) {
    const char = source[i];
    if (char === '\\' && i + 1 < source.length) {
      const next = source[i + 1];
      i++;
      if (next === 's') result += inClass ? XSD_SPACE : `[${XSD_SPACE}]`;
      else if (next === 'S') result += inClass ? XSD_NON_SPACE : `[^${XSD_SPACE}]`;
      else result += char + next;
      continue;
    }
    if (char === '[') inClass = true;
    else if (char === ']') inClass = false;
    result += char;
  }
  return result;
}

/**
 * base64Binary (https://hl7.org/fhir/R4/datatypes.html#base64Binary). The R4 regex
 * `(\s*([0-9a-zA-Z\+/=]){4}\s*)+` backtracks exponentially on whitespace, so the same rule — groups of
 * four base64 characters, whitespace allowed between groups — is checked with a single linear scan.
 */
export function isBase64(text: string): boolean {
  let significant = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d || c === 0x0c) {
      if (significant % 4 !== 0) return false;
      continue;
    }
    const isBase64Char =
      (c >= 0x41 && c <= 0x5a) ||
      (c >= 0x61 && c <= 0x7a) ||
      (c >= 0x30 && c <= 0x39) ||
      c === 0x2b ||
      c === 0x2f ||
      c === 0x3d;
    if (!isBase64Char) return false;
    significant++;
  }
  return significant > 0 && significant % 4 === 0;
}

function wrongJsonType(value: unknown, expected: string): PrimitiveProblem {
  const actual = Array.isArray(value) ? 'an array' : value === null ? 'null' : `a ${typeof value}`;
  return { code: 'structure', message: `Expected ${expected}, found ${actual}` };
}

function describe(value: string): string {
  return JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value);
}
