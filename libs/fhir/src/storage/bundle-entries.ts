import { isValidId } from '../validation/validate-resource';
import { isPlaceholder } from './reference-rewriting';

/**
 * Reading a posted transaction/batch Bundle (docs/api.md §5, https://hl7.org/fhir/R4/http.html#transaction):
 * the request of each entry and the id it asks for. Pure: no storage, no HTTP.
 */

export type EntryMethod = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

export interface ParsedRequestUrl {
  type: string;
  id?: string;
  /** `_history/{vid}` on a GET. */
  versionId?: string;
  /** Query string of a search GET (without `?`). */
  query?: string;
}

/**
 * Splits a relative request URL: `Patient`, `Patient/1`, `Patient/1/_history/2`, `Patient?name=x`.
 * Absolute URLs are accepted and reduced to their last `Type[/id]` segments. Undefined = unreadable.
 */
export function parseRequestUrl(url: string): ParsedRequestUrl | undefined {
  const [pathPart, query] = splitOnce(url.trim(), '?');
  const segments = pathPart.split('/').filter((s) => s.length > 0);
  const history = segments.indexOf('_history');
  let tail: string[];
  let versionId: string | undefined;
  if (history >= 0) {
    if (history < 2 || history !== segments.length - 2) return undefined;
    tail = segments.slice(history - 2, history);
    versionId = segments[history + 1];
  } else if (/^[A-Z][A-Za-z]+$/.test(segments[segments.length - 1] ?? '')) {
    tail = segments.slice(-1);
  } else {
    tail = segments.slice(-2);
  }
  const [type, id] = tail;
  if (!type || !/^[A-Z][A-Za-z]+$/.test(type)) return undefined;
  const out: ParsedRequestUrl = { type };
  if (id !== undefined) out.id = id;
  if (versionId !== undefined) out.versionId = versionId;
  if (query) out.query = query;
  return out;
}

function splitOnce(value: string, separator: string): [string, string | undefined] {
  const at = value.indexOf(separator);
  return at < 0 ? [value, undefined] : [value.slice(0, at), value.slice(at + 1)];
}

/** Where an entry's id comes from (docs/api.md §5, id rules). */
export type EntryIdSource =
  | { kind: 'chosen'; id: string }
  | { kind: 'assigned'; placeholder?: string }
  | { kind: 'invalid'; message: string };

/**
 * The id a POST entry asks for: `resource.id`, else a `Type/id` or absolute URL in `fullUrl`, else
 * assigned by the server (a `urn:uuid:` fullUrl is then a placeholder to resolve).
 */
export function entryIdSource(type: string, fullUrl: unknown, resourceId: unknown): EntryIdSource {
  const placeholder = typeof fullUrl === 'string' && isPlaceholder(fullUrl) ? fullUrl : undefined;
  if (resourceId !== undefined) {
    if (typeof resourceId !== 'string' || !isValidId(resourceId)) {
      return { kind: 'invalid', message: `resource.id ${JSON.stringify(resourceId)} is not a valid FHIR id` };
    }
    return { kind: 'chosen', id: resourceId };
  }
  if (typeof fullUrl === 'string' && fullUrl.length > 0 && !placeholder) {
    const parsed = parseRequestUrl(fullUrl);
    if (!parsed || parsed.type !== type || parsed.id === undefined || parsed.versionId !== undefined) {
      return { kind: 'invalid', message: `fullUrl "${fullUrl}" does not name a ${type} with an id` };
    }
    if (!isValidId(parsed.id)) {
      return { kind: 'invalid', message: `the id in fullUrl "${fullUrl}" is not a valid FHIR id` };
    }
    return { kind: 'chosen', id: parsed.id };
  }
  return placeholder ? { kind: 'assigned', placeholder } : { kind: 'assigned' };
}
