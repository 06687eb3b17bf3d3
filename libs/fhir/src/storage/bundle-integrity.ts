import { entryIdSource, parseRequestUrl, type EntryMethod } from './bundle-entries';

/** A reference meant as a placeholder (well-formed or not): never a stored reference. */
const PLACEHOLDER_REFERENCE = /^urn:(uuid|oid):/i;

/**
 * Whole-bundle refusals of a posted transaction or batch (docs/security.md;
 * https://hl7.org/fhir/R4/bundle.html#bundle-unique, https://hl7.org/fhir/R4/http.html#trules):
 * a Bundle whose entries contradict each other is refused as a whole, nothing stored, rather than
 * stored in a way that depends on entry order (duplicates, v1 then v2, literal `urn:uuid:` text).
 */

export interface IntegrityEntry {
  index: number;
  method: EntryMethod;
  url: string;
  fullUrl?: string;
  resource?: Record<string, unknown>;
}

export interface IntegrityProblem {
  path: string;
  message: string;
}

/**
 * - two entries with the same `fullUrl` (bdl-7: fullUrl unique within a Bundle, across versions);
 * - two DELETE/POST/PUT entries that act on the same resource (FHIR: overlapping identities in the
 *   write steps make a transaction fail); conditional URLs are not known here and not counted;
 * - a `reference` that is a `urn:uuid:`/`urn:oid:` placeholder naming no written entry: it can
 *   never resolve, and would be stored as literal text.
 */
export function bundleIntegrityProblems(entries: readonly IntegrityEntry[]): IntegrityProblem[] {
  const problems: IntegrityProblem[] = [];
  const byFullUrl = new Map<string, number>();
  const byTarget = new Map<string, number>();
  const placeholders = new Set<string>();
  for (const entry of entries) {
    const path = `Bundle.entry[${entry.index}]`;
    if (entry.fullUrl) {
      const first = byFullUrl.get(entry.fullUrl);
      if (first !== undefined) {
        problems.push({
          path: `${path}.fullUrl`,
          message: `${path}.fullUrl "${entry.fullUrl}" is also the fullUrl of Bundle.entry[${first}]`,
        });
      } else byFullUrl.set(entry.fullUrl, entry.index);
    }
    const target = writeTarget(entry);
    if (target !== undefined) {
      const first = byTarget.get(target);
      if (first !== undefined) {
        problems.push({
          path: `${path}.request`,
          message: `${path} acts on ${target}, which Bundle.entry[${first}] acts on too`,
        });
      } else byTarget.set(target, entry.index);
    }
    // the writer resolves every `urn:` fullUrl of a POST/PUT entry to that entry's Type/id
    if ((entry.method === 'POST' || entry.method === 'PUT') && entry.fullUrl?.startsWith('urn:'))
      placeholders.add(entry.fullUrl);
  }
  for (const entry of entries) {
    if (entry.method !== 'POST' && entry.method !== 'PUT') continue;
    for (const reference of placeholderReferences(entry.resource)) {
      const base = reference.split('/_history/')[0];
      if (!placeholders.has(base)) {
        problems.push({
          path: `Bundle.entry[${entry.index}].resource`,
          message: `Bundle.entry[${entry.index}] refers to ${reference}, which is the fullUrl of no POST or PUT entry`,
        });
      }
    }
  }
  return problems;
}

/** `Type/id` a write entry acts on, when its request names one. */
function writeTarget(entry: IntegrityEntry): string | undefined {
  if (entry.method === 'GET') return undefined;
  const parsed = parseRequestUrl(entry.url);
  if (!parsed || parsed.query !== undefined || parsed.versionId !== undefined) return undefined;
  if (entry.method === 'POST') {
    if (parsed.id !== undefined || !entry.resource) return undefined;
    const source = entryIdSource(parsed.type, entry.fullUrl, entry.resource.id);
    return source.kind === 'chosen' ? `${parsed.type}/${source.id}` : undefined;
  }
  return parsed.id === undefined ? undefined : `${parsed.type}/${parsed.id}`;
}

/** Every `reference` value (at any depth, contained resources included) that is a placeholder. */
function placeholderReferences(value: unknown, found: string[] = []): string[] {
  if (Array.isArray(value)) {
    for (const item of value) placeholderReferences(item, found);
  } else if (value !== null && typeof value === 'object') {
    for (const [key, child] of Object.entries(value as Record<string, unknown>)) {
      if (key === 'reference' && typeof child === 'string') {
        if (PLACEHOLDER_REFERENCE.test(child)) found.push(child);
      } else placeholderReferences(child, found);
    }
  }
  return found;
}
