import { deletedOutcome, issue, operationOutcome, versionEtag, type FhirVersion } from '@app/fhir';
import type { FhirResult, StoredVersion } from './results';

/** Status, headers and body of one FHIR answer, as `writeFhirReply` writes it. */
export interface HttpReply {
  status: number;
  /** JSON text (stored resources are served untouched) or an object to serialise; '' = no body. */
  body: string | object;
  headers?: Record<string, string>;
  /** The media type of an answer that is JSON but no FHIR resource (a bulk export manifest). */
  mediaType?: 'application/json';
}

/**
 * The `Prefer` header's `return=` of the FHIR write interactions (https://hl7.org/fhir/R4/http.html#ops):
 * `minimal` (no body), `representation` (the resource, the default here) or `OperationOutcome`.
 */
export type ReturnPreference = 'minimal' | 'representation' | 'OperationOutcome';

export function returnPreference(prefer: string | undefined): ReturnPreference {
  const match = /(?:^|[,;\s])return\s*=\s*"?(minimal|representation|OperationOutcome)"?/i.exec(prefer ?? '');
  if (!match) return 'representation';
  const value = match[1].toLowerCase();
  return value === 'minimal'
    ? 'minimal'
    : value === 'operationoutcome'
      ? 'OperationOutcome'
      : 'representation';
}

/** The headers of a version: ETag and Last-Modified from its meta (https://hl7.org/fhir/R4/http.html#read). */
export function versionHeaders(doc: StoredVersion): Record<string, string> {
  return { ETag: versionEtag(doc.vid), 'Last-Modified': doc.lu.toUTCString() };
}

/** The body of a create/update shaped by `Prefer: return=`: the resource, nothing, or what was done. */
function storedBody(doc: StoredVersion, prefer: string | undefined, done: string): string | object {
  switch (returnPreference(prefer)) {
    case 'representation':
      return doc.json ?? '{}';
    case 'minimal':
      return '';
    case 'OperationOutcome':
      return operationOutcome([issue('informational', done, { severity: 'information' })]);
  }
}

/**
 * A domain result as an HTTP reply (docs/api.md §5, §7): status from the result's kind; Location,
 * ETag and Last-Modified derived from the version it is about; `Prefer: return=` applied to writes.
 * `base` is the public base URL of the store (Location is absolute).
 */
export function presentReply(
  result: FhirResult,
  version: FhirVersion,
  base: string,
  prefer: string | undefined,
): HttpReply {
  switch (result.kind) {
    case 'written':
    case 'matched': {
      const { doc } = result;
      const created = result.kind === 'written' && result.created;
      const headers = {
        Location: `${base}/${version}/${doc.t}/${doc.id}/_history/${doc.vid}`,
        ...versionHeaders(doc),
      };
      const done =
        result.kind === 'matched'
          ? `${doc.t}/${doc.id} (version ${doc.vid}) already exists: nothing was created`
          : `${doc.t}/${doc.id} ${created ? 'created' : 'updated'}: version ${doc.vid}`;
      return { status: created ? 201 : 200, body: storedBody(result.doc, prefer, done), headers };
    }
    case 'found':
      return { status: 200, body: result.doc.json ?? '{}', headers: versionHeaders(result.doc) };
    case 'not-modified':
      return { status: 304, body: '', headers: versionHeaders(result.doc) };
    case 'removed': {
      const body = deletedOutcome(result.type, result.id, result.vid);
      // the tombstone is the resource's version now; a removed version has none to name
      const headers = result.of === 'resource' ? { ETag: versionEtag(result.vid) } : undefined;
      return headers ? { status: 200, body, headers } : { status: 200, body };
    }
    case 'page':
      return { status: 200, body: result.json };
    case 'output': {
      const reply: HttpReply = { status: 200, body: result.body };
      if (result.mediaType) reply.mediaType = result.mediaType;
      if (result.expires) reply.headers = { Expires: result.expires.toUTCString() };
      return reply;
    }
    case 'accepted':
      return { status: 202, body: result.outcome, headers: { 'Content-Location': result.statusUrl } };
    case 'in-progress':
      return {
        status: 202,
        body: '',
        headers: { 'X-Progress': result.progress, 'Retry-After': String(result.retryAfterSeconds) },
      };
  }
}
