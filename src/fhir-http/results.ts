import type { OperationOutcome } from '@app/fhir';

/**
 * What FHIR services answer: small domain results, never status numbers or header maps. Two
 * presenters turn one result into what its channel needs: `presentReply` (reply-presenter.ts) into
 * an HTTP reply (status, Location, ETag, Last-Modified derived from the version, `Prefer: return=`),
 * the bundle into a transaction/batch response entry. A handler may also return a resource object
 * (served with its route's status) or nothing (no body).
 */

/**
 * The stored version a result is about. Its fields are storage's own names, so that a stored
 * document (current or history row) is one as it is: a read answers with no copy of it.
 */
export interface StoredVersion {
  readonly t: string;
  readonly id: string;
  readonly vid: number;
  readonly lu: Date;
  /** The resource exactly as served (JSON text); null on a delete tombstone. */
  readonly json: string | null;
}

/** A version stored by a create, update, patch or conditional write (201 when `created`). */
export interface Written {
  readonly kind: 'written';
  readonly doc: StoredVersion;
  /** This write made the resource exist (version 1, or a write after a delete). */
  readonly created: boolean;
}

/** A conditional create that matched an existing resource: nothing was stored (200 with it). */
export interface Matched {
  readonly kind: 'matched';
  readonly doc: StoredVersion;
}

/** A read or versioned read: the version found. */
export interface Found {
  readonly kind: 'found';
  readonly doc: StoredVersion;
}

/** A conditional read whose version the client holds already (304 with its ETag). */
export interface NotModified {
  readonly kind: 'not-modified';
  readonly doc: StoredVersion;
}

/**
 * A delete: of the resource (`of: 'resource'`, a tombstone version `vid`, or the one it had) or of
 * one version (`of: 'version'`, `DELETE …/_history/{vid}`).
 */
export interface Removed {
  readonly kind: 'removed';
  readonly type: string;
  readonly id: string;
  readonly vid: number;
  readonly of: 'resource' | 'version';
}

/** A Bundle as JSON text: a searchset or history page, a transaction or batch response. */
export interface Page {
  readonly kind: 'page';
  readonly json: string;
}

/**
 * What an operation answers that is no stored version: a resource (an OperationOutcome, Parameters),
 * or JSON that is no FHIR resource (`mediaType`, e.g. a bulk export manifest) valid until `expires`.
 */
export interface OperationOutput {
  readonly kind: 'output';
  readonly body: object | string;
  readonly mediaType?: 'application/json';
  readonly expires?: Date;
}

/** Asynchronous work accepted (202): its status is polled at `statusUrl` (Content-Location). */
export interface Accepted {
  readonly kind: 'accepted';
  readonly statusUrl: string;
  readonly outcome: OperationOutcome;
}

/** Asynchronous work not done yet (202, no body): how far it is and when to ask again. */
export interface InProgress {
  readonly kind: 'in-progress';
  readonly progress: string;
  readonly retryAfterSeconds: number;
}

export type FhirResult =
  Written | Matched | Found | NotModified | Removed | Page | OperationOutput | Accepted | InProgress;

const KINDS: ReadonlySet<string> = new Set<FhirResult['kind']>([
  'written',
  'matched',
  'found',
  'not-modified',
  'removed',
  'page',
  'output',
  'accepted',
  'in-progress',
]);

/** A domain result, as opposed to a resource a handler returns as it is. */
export function isFhirResult(value: unknown): value is FhirResult {
  if (value === null || typeof value !== 'object') return false;
  const kind = (value as { kind?: unknown }).kind;
  return typeof kind === 'string' && KINDS.has(kind) && !('resourceType' in value);
}

export const written = (doc: StoredVersion, created: boolean): Written => ({ kind: 'written', doc, created });
export const found = (doc: StoredVersion): Found => ({ kind: 'found', doc });
export const page = (json: string): Page => ({ kind: 'page', json });
