/**
 * The directory entry: one health system or payer a client can offer in a "connect your health
 * system" picker (docs/api.md §11). Pure logic only:
 * the record shape, its validation, and the normalised search terms stored beside it.
 */

export const SYSTEM_TYPES = ['HealthSystem', 'Payer2Payer', 'PayerPatientAccess'] as const;
export type SystemType = (typeof SYSTEM_TYPES)[number];

export const ENTRY_STATUSES = ['active', 'inactive'] as const;
export type EntryStatus = (typeof ENTRY_STATUSES)[number];

export interface DirectoryAddress {
  line: string[];
  city: string | null;
  state: string | null;
  postalCode: string | null;
}

/** The record as clients see it (search results, clinical list, export). Stable: add, never rename. */
export interface DirectoryEntry {
  id: string;
  name: string;
  system_type: SystemType;
  address: DirectoryAddress;
  /** EHR or platform vendor name (e.g. "Epic"), when known. */
  ehr: string | null;
  /** FHIR R4 base URL a client connects to, when known. */
  fhir_base_url: string | null;
  /** Absolute URL of a logo image, when known. */
  logo: string | null;
  status: EntryStatus;
  created_at: string;
  updated_at: string;
}

/** What an import line or a seed line carries: the entry without its timestamps. */
export type DirectoryEntryInput = Omit<DirectoryEntry, 'created_at' | 'updated_at'>;

/** Longest prefix stored per word; longer query words are checked against the full words. */
export const MAX_PREFIX_LENGTH = 15;

const COMBINING_MARKS = /[\u0300-\u036f]/g;
const APOSTROPHES = /['\u2019\u02bc]/g;
const WORD = /[\p{L}\p{N}]+/gu;

/** Lower-case, accent-free form ("Hôpital St. Mary's" → "hopital st. marys"). */
export function foldText(value: string): string {
  return value.normalize('NFD').replace(COMBINING_MARKS, '').replace(APOSTROPHES, '').toLowerCase();
}

/**
 * Words of a text, folded. Apostrophes join ("Mary's" → "marys") so that "mary" still matches
 * as a prefix; any other non-letter, non-digit separates. Regex metacharacters and Mongo
 * operators therefore never reach a query: they are separators, matched as text would be.
 */
export function foldedWords(value: string): string[] {
  return Array.from(foldText(value).matchAll(WORD), (m) => m[0]);
}

/**
 * Every prefix (1..MAX_PREFIX_LENGTH characters) of every word of the searchable fields. Matching
 * a query word is then plain equality on a multikey index (no regex): an index scan on MongoDB and
 * DocumentDB, and on MongoDB rows come in `sort_name` order straight from the index. Cost: about 8 index keys per word (~60 per entry) — measured in bench/directory.
 */
export function searchPrefixes(words: readonly string[]): string[] {
  const out = new Set<string>();
  for (const word of words) {
    const max = Math.min(word.length, MAX_PREFIX_LENGTH);
    for (let n = 1; n <= max; n++) out.add(word.slice(0, n));
  }
  return [...out];
}

/** Words of the fields the search matches: name, address.line, address.city (docs/api.md §11). */
export function entryWords(entry: Pick<DirectoryEntryInput, 'name' | 'address'>): string[] {
  const texts = [entry.name, ...entry.address.line, entry.address.city ?? ''];
  return [...new Set(texts.flatMap(foldedWords))];
}

/** Sort key: folded name with whitespace collapsed, so "ádam" sorts with "adam". */
export function sortName(name: string): string {
  return foldText(name).replace(/\s+/g, ' ').trim();
}

/** Escapes every regex metacharacter so that input is always matched literally. */
export function escapeRegex(value: string): string {
  return value.replace(/[.*+?^${}()|[\]\\/-]/g, '\\$&');
}

/** A parsed search query: the words, longest first (the most selective one drives the index). */
export interface ParsedQuery {
  /** The query had text but no word in it (e.g. ".*"): nothing can match. */
  matchesNothing: boolean;
  words: string[];
}

export function parseQueryWords(query: string | undefined): ParsedQuery {
  if (query === undefined || query.trim() === '') return { matchesNothing: false, words: [] };
  const words = [...new Set(foldedWords(query))]
    // a word that is a prefix of another query word adds nothing
    .filter((w, _i, all) => !all.some((o) => o !== w && o.startsWith(w)))
    .sort((a, b) => b.length - a.length || a.localeCompare(b));
  return { matchesNothing: words.length === 0, words };
}

const ID = /^[A-Za-z0-9\-.]{1,64}$/;
const FIELDS = new Set(['id', 'name', 'system_type', 'address', 'ehr', 'fhir_base_url', 'logo', 'status']);
const ADDRESS_FIELDS = new Set(['line', 'city', 'state', 'postalCode']);
const MAX_TEXT = 300;
const MAX_LINES = 4;

export type ValidationResult = { ok: true; entry: DirectoryEntryInput } | { ok: false; reason: string };

function optionalText(value: unknown, field: string, problems: string[]): string | null {
  if (value === undefined || value === null || value === '') return null;
  if (typeof value !== 'string') {
    problems.push(`${field} must be a string`);
    return null;
  }
  const trimmed = value.trim();
  if (trimmed.length > MAX_TEXT) problems.push(`${field} is longer than ${MAX_TEXT} characters`);
  return trimmed === '' ? null : trimmed;
}

function optionalUrl(value: unknown, field: string, problems: string[]): string | null {
  const text = optionalText(value, field, problems);
  if (text === null) return null;
  try {
    const url = new URL(text);
    if (url.protocol === 'http:' || url.protocol === 'https:') return text;
  } catch {
    // reported below
  }
  problems.push(`${field} must be an absolute http(s) URL`);
  return null;
}

function parseAddress(value: unknown, problems: string[]): DirectoryAddress {
  const empty: DirectoryAddress = { line: [], city: null, state: null, postalCode: null };
  if (value === undefined || value === null) return empty;
  if (typeof value !== 'object' || Array.isArray(value)) {
    problems.push('address must be an object');
    return empty;
  }
  const raw = value as Record<string, unknown>;
  for (const key of Object.keys(raw)) {
    if (!ADDRESS_FIELDS.has(key)) problems.push(`unknown field address.${key}`);
  }
  let line: string[] = [];
  if (raw.line !== undefined && raw.line !== null) {
    if (!Array.isArray(raw.line) || raw.line.some((l) => typeof l !== 'string')) {
      problems.push('address.line must be an array of strings');
    } else {
      line = (raw.line as string[]).map((l) => l.trim()).filter(Boolean);
      if (line.length > MAX_LINES) problems.push(`address.line has more than ${MAX_LINES} lines`);
      if (line.some((l) => l.length > MAX_TEXT))
        problems.push(`address.line longer than ${MAX_TEXT} characters`);
    }
  }
  return {
    line,
    city: optionalText(raw.city, 'address.city', problems),
    state: optionalText(raw.state, 'address.state', problems),
    postalCode: optionalText(raw.postalCode, 'address.postalCode', problems),
  };
}

/** Checks one raw record (import line, seed line). Unknown fields are rejected: they are typos. */
export function validateEntry(raw: unknown): ValidationResult {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
    return { ok: false, reason: 'a record must be a JSON object' };
  }
  const record = raw as Record<string, unknown>;
  const problems: string[] = [];
  for (const key of Object.keys(record)) {
    if (!FIELDS.has(key) && key !== 'created_at' && key !== 'updated_at')
      problems.push(`unknown field ${key}`);
  }
  const id = typeof record.id === 'string' ? record.id.trim() : '';
  if (!ID.test(id)) problems.push('id is required: 1-64 characters of A-Z a-z 0-9 - .');
  const name = optionalText(record.name, 'name', problems);
  if (name === null) problems.push('name is required');
  const systemType = record.system_type;
  if (!SYSTEM_TYPES.includes(systemType as SystemType)) {
    problems.push(`system_type must be one of ${SYSTEM_TYPES.join(', ')}`);
  }
  const status =
    record.status === undefined || record.status === null || record.status === '' ? 'active' : record.status;
  if (!ENTRY_STATUSES.includes(status as EntryStatus)) problems.push('status must be active or inactive');
  const entry: DirectoryEntryInput = {
    id,
    name: name ?? '',
    system_type: systemType as SystemType,
    address: parseAddress(record.address, problems),
    ehr: optionalText(record.ehr, 'ehr', problems),
    fhir_base_url: optionalUrl(record.fhir_base_url, 'fhir_base_url', problems),
    logo: optionalUrl(record.logo, 'logo', problems),
    status: status as EntryStatus,
  };
  return problems.length > 0 ? { ok: false, reason: problems.join('; ') } : { ok: true, entry };
}
