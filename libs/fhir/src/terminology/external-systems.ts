import { UcumLhcUtils } from '@lhncbc/ucum-lhc';

/**
 * Code systems defined outside FHIR, judged here without a terminology server:
 * UCUM through the NLM's UCUM library, BCP-47 language tags (RFC 5646) and MIME types (RFC 6838) by
 * their grammar, ISO 4217 currencies by their form. SNOMED CT, LOINC, RxNorm … are not checked
 * (the outcome says so as information, as the reference validator does without a server).
 */
export const UCUM = 'http://unitsofmeasure.org';
export const BCP47 = 'urn:ietf:bcp:47';
export const MIME_TYPES = 'urn:ietf:bcp:13';
export const CURRENCIES = 'urn:iso:std:iso:4217';

/** The base mimetypes ValueSet names the RFC as its canonical (R4 `…/bcp13.txt`). */
export const MIME_VALUE_SETS = new Set([
  'http://www.rfc-editor.org/bcp/bcp13.txt',
  'http://hl7.org/fhir/ValueSet/mimetypes',
]);

/** RFC 5646 §2.1 langtag | privateuse | grandfathered (irregular and regular forms listed in the RFC). */
const LANGTAG = new RegExp(
  '^(?:' +
    '(?:[a-z]{2,3}(?:-[a-z]{3}){0,3}|[a-z]{4}|[a-z]{5,8})' + // language (with extlang)
    '(?:-[a-z]{4})?' + // script
    '(?:-(?:[a-z]{2}|[0-9]{3}))?' + // region
    '(?:-(?:[a-z0-9]{5,8}|[0-9][a-z0-9]{3}))*' + // variants
    '(?:-[0-9a-wyz](?:-[a-z0-9]{2,8})+)*' + // extensions
    '(?:-x(?:-[a-z0-9]{1,8})+)?' + // private use
    '|x(?:-[a-z0-9]{1,8})+' +
    '|en-gb-oed|i-(?:ami|bnn|default|enochian|hak|klingon|lux|mingo|navajo|pwn|tao|tay|tsu)' +
    '|sgn-(?:be-fr|be-nl|ch-de)|art-lojban|cel-gaulish|no-(?:bok|nyn)|zh-(?:guoyu|hakka|min|min-nan|xiang)' +
    ')$',
  'i',
);

export function isLanguageTag(code: string): boolean {
  return code.length <= 100 && LANGTAG.test(code);
}

/** RFC 6838 §4.2 restricted-name for type and subtype, optional `; parameter=value` pairs (RFC 2045). */
const RESTRICTED_NAME = '[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]{0,126}';
const TOKEN = "[!#$%&'*+.^_`|~0-9A-Za-z-]+";
const MIME = new RegExp(
  `^${RESTRICTED_NAME}/${RESTRICTED_NAME}(?:\\s*;\\s*${TOKEN}=(?:"[^"\\\\]*"|[^;"]+))*$`,
);

export function isMimeType(code: string): boolean {
  return code.length <= 300 && MIME.test(code);
}

/** CapabilityStatement.format binds to the MIME types but allows `xml | json | ttl` (R4 capabilitystatement.html). */
const FORMAT_SHORTHANDS = new Set(['xml', 'json', 'ttl']);

function isMimeTypeOrFormat(code: string): boolean {
  return FORMAT_SHORTHANDS.has(code) || isMimeType(code);
}

export function isCurrencyCode(code: string): boolean {
  return /^[A-Z]{3}$/.test(code);
}

/** UCUM look-ups are memoised; the cap keeps a client from filling memory with made-up units. */
const UCUM_CACHE_LIMIT = 20_000;
const ucumCache = new Map<string, boolean>();
let ucumUtils: UcumLhcUtils | undefined;

export function isUcumCode(code: string): boolean {
  const cached = ucumCache.get(code);
  if (cached !== undefined) return cached;
  // Longer expressions are not units anyone writes, and the parser's time grows with the length.
  let valid = false;
  if (code.length <= 200) {
    ucumUtils ??= UcumLhcUtils.getInstance();
    try {
      valid = ucumUtils.validateUnitString(code, false).status === 'valid';
    } catch {
      valid = false;
    }
  }
  if (ucumCache.size < UCUM_CACHE_LIMIT) ucumCache.set(code, valid);
  return valid;
}

/** The grammar or library check of an external system, or undefined when this system is not checked. */
export function externalCheck(system: string): ((code: string) => boolean) | undefined {
  switch (system) {
    case UCUM:
      return isUcumCode;
    case BCP47:
      return isLanguageTag;
    case MIME_TYPES:
      return isMimeTypeOrFormat;
    case CURRENCIES:
      return isCurrencyCode;
    default:
      return undefined;
  }
}
