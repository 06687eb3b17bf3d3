/**
 * What a FHIR handler answers when the status or headers are its own to choose (a create's 201 and
 * Location, a read's ETag); a handler may also return a resource (served with the route's status)
 * or nothing (no body). The reply interceptor sends it.
 */
export interface FhirReply {
  status: number;
  /** JSON text (stored resources are served untouched) or an object to serialise; '' = no body. */
  body: string | object;
  headers?: Record<string, string>;
  /** The media type of an answer that is JSON but no FHIR resource (a bulk export manifest). */
  mediaType?: 'application/json';
}

export function isFhirReply(value: unknown): value is FhirReply {
  if (value === null || typeof value !== 'object') return false;
  const v = value as Record<string, unknown>;
  return typeof v.status === 'number' && 'body' in v && !('resourceType' in v);
}
