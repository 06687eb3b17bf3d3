import { randomUUID } from 'node:crypto';
import { deletedOutcome, versionEtag, type FhirVersion, type TransactionResponseEntry } from '@app/fhir';
import { mapError, outcomeOf } from '../../common/error-mapping';
import type { Found, Matched, Page, Removed, Written } from '../../fhir-http/results';

const REASON: Record<number, string> = {
  200: 'OK',
  201: 'Created',
  400: 'Bad Request',
  403: 'Forbidden',
  404: 'Not Found',
  409: 'Conflict',
  410: 'Gone',
  412: 'Precondition Failed',
  422: 'Unprocessable Entity',
  500: 'Internal Server Error',
  503: 'Service Unavailable',
};

const statusLine = (status: number) => `${status} ${REASON[status] ?? ''}`.trim();

/** What an entry of a transaction or batch answers with. */
export type EntryResult = Written | Matched | Found | Removed | Page;

/**
 * A domain result as a transaction/batch response entry (https://hl7.org/fhir/R4/bundle.html#
 * transaction-response), the bundle's presenter beside the HTTP one (fhir-http/reply-presenter.ts):
 * the same result, the same status, its location, ETag and lastModified as entry fields.
 * `representation`: a written resource is served in the entry (`Prefer: return=representation`).
 */
export function entryOf(
  result: EntryResult,
  version: FhirVersion,
  base: string,
  representation: boolean,
): TransactionResponseEntry {
  switch (result.kind) {
    case 'written':
    case 'matched': {
      const { doc } = result;
      const entry: TransactionResponseEntry = {
        fullUrl: `${base}/${version}/${doc.t}/${doc.id}`,
        response: {
          status: statusLine(result.kind === 'written' && result.created ? 201 : 200),
          location: `${doc.t}/${doc.id}/_history/${doc.vid}`,
          etag: versionEtag(doc.vid),
          lastModified: doc.lu.toISOString(),
        },
      };
      // a matched conditional create names what it found, its resource is not served again
      if (representation && result.kind === 'written' && doc.json) entry.resourceJson = doc.json;
      return entry;
    }
    case 'removed': {
      const outcome = deletedOutcome(result.type, result.id, result.vid);
      const etag = result.of === 'resource' ? versionEtag(result.vid) : undefined;
      return { response: { status: statusLine(200), outcome, etag } };
    }
    case 'found': {
      const { doc } = result;
      return {
        fullUrl: `${base}/${version}/${doc.t}/${doc.id}`,
        resourceJson: doc.json ?? '{}',
        response: { status: statusLine(200), etag: versionEtag(doc.vid) },
      };
    }
    case 'page':
      // a searchset Bundle has no URL of its own
      return {
        fullUrl: `urn:uuid:${randomUUID()}`,
        resourceJson: result.json,
        response: { status: statusLine(200) },
      };
  }
}

/** A failed entry: its status and OperationOutcome, as the error filter would answer it alone. */
export function failureEntry(error: unknown, version: FhirVersion): TransactionResponseEntry {
  const mapped = mapError(error);
  return { response: { status: statusLine(mapped.status), outcome: outcomeOf(error, version, mapped) } };
}
