/**
 * String helpers shared by index extraction (write time) and filter building (read time). Both
 * sides must normalise identically, otherwise a stored entry and a query never meet.
 */

const COMBINING_MARKS = /[\u0300-\u036f]/g;
const WHITESPACE_RUN = /\s+/g;

/** Longest string value kept in an index entry: keeps index keys compact (documented approximation). */
export const MAX_INDEXED_STRING_LENGTH = 200;

/**
 * FHIR string search is case- and accent-insensitive (https://hl7.org/fhir/R4/search.html#string):
 * lower-case, strip combining marks after NFD decomposition, collapse whitespace.
 */
export function normalizeText(value: string): string {
  return value
    .normalize('NFD')
    .replace(COMBINING_MARKS, '')
    .toLowerCase()
    .replace(WHITESPACE_RUN, ' ')
    .trim()
    .slice(0, MAX_INDEXED_STRING_LENGTH);
}

/** Escapes every regex metacharacter so user input is always matched literally. */
export function escapeRegex(value: string): string {
  return value.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/**
 * Escapes `\` and `|` inside one component of a `param|system|code` entry, so that a code containing
 * a pipe can never be confused with a system/code split. FHIR search values use the same escape
 * (`\|`, https://hl7.org/fhir/R4/search.html#escaping), so a parsed value is escaped the same way.
 */
export function escapeComponent(value: string): string {
  return value.replace(/[\\|]/g, '\\$&');
}

const WORD = /[\p{L}\p{N}]+/gu;

/** Lower-case, accent-free words of at least two characters, in order of appearance. */
export function textWords(value: string): string[] {
  const normalized = value.normalize('NFD').replace(COMBINING_MARKS, '').toLowerCase();
  const words: string[] = [];
  for (const match of normalized.matchAll(WORD)) {
    if (match[0].length >= 2) words.push(match[0].slice(0, MAX_INDEXED_STRING_LENGTH));
  }
  return words;
}

/**
 * A number as 16 hex digits whose string order is the numeric order (IEEE-754 bits, sign bit
 * flipped for positives, all bits flipped for negatives). Number and quantity entries are then
 * `param|<16 hex>` strings: a numeric range is a set of prefix buckets (range-buckets.ts) plus a
 * regex over one array element (range-regex.ts).
 */
export function sortableNumber(value: number): string {
  const view = new DataView(new ArrayBuffer(8));
  view.setFloat64(0, value === 0 ? 0 : value);
  const bits = view.getBigUint64(0);
  const ordered = bits & 0x8000000000000000n ? ~bits & 0xffffffffffffffffn : bits | 0x8000000000000000n;
  return ordered.toString(16).padStart(16, '0');
}
