import { createHash, randomUUID } from 'crypto';
import type { FhirVersion } from '../definitions/fhir-version';

/**
 * Deterministic document keys of the `resources` and `resource_history` collections
 * (docs/storage.md). `_id` equality is the one filter every engine pushes down, and a retried
 * write with the same key is a no-op instead of a duplicate.
 */
export function resourceKey(version: FhirVersion, clientId: string, type: string, id: string): string {
  return `${version}|${clientId}|${type}|${id}`;
}

/** `_id` of one version in `resource_history`. */
export function historyKey(resourceKeyValue: string, versionId: number): string {
  return `${resourceKeyValue}|${versionId}`;
}

/**
 * Id of the Provenance recorded for one version of one resource: derived from the target's key
 * and version so that a retried write or `store check --repair` recreates exactly one, never two.
 * 40 hex characters: a valid FHIR id (https://hl7.org/fhir/R4/datatypes.html#id).
 */
export function provenanceIdFor(targetKey: string, versionId: number): string {
  return createHash('sha1').update(historyKey(targetKey, versionId)).digest('hex');
}

/** A server-assigned logical id: random, URL-safe and a valid FHIR id (36 characters). */
export function newResourceId(): string {
  return randomUUID();
}

/** Weak ETag of a version (https://hl7.org/fhir/R4/http.html#versioning). */
export function versionEtag(versionId: number): string {
  return `W/"${versionId}"`;
}

/**
 * Parses an `If-Match` value: `W/"3"`, `"3"` or `3` → 3; anything else → undefined
 * (the caller answers 412 for a value that cannot match).
 */
export function parseVersionEtag(value: string): number | undefined {
  const match = /^\s*(?:W\/)?"?(\d{1,15})"?\s*$/.exec(value);
  return match ? Number(match[1]) : undefined;
}
