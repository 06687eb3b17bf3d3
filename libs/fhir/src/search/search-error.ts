/**
 * Error raised for a search the server cannot run. `code` is an OperationOutcome issue type
 * (https://hl7.org/fhir/R4/valueset-issue-type.html) so the HTTP layer can map it: `invalid` → 400,
 * `not-supported` → 400 (or 501), `too-costly` → 403/400.
 */
export type SearchErrorCode = 'invalid' | 'not-supported' | 'too-costly';

export class SearchError extends Error {
  constructor(
    readonly code: SearchErrorCode,
    message: string,
  ) {
    super(message);
    this.name = 'SearchError';
  }
}
