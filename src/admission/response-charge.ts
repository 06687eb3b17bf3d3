import type { Response } from 'express';

/** What admission leaves on `res.locals` of an admitted FHIR request. */
interface ResponseCharge {
  chargeResponse?: (bytes: number) => void;
}

/** Set by admission on an admitted FHIR request: how its answer is charged to the client's share. */
export function setResponseCharge(res: Response, charge: (bytes: number) => void): void {
  (res.locals as ResponseCharge).chargeResponse = charge;
}

/**
 * Counts an answer of `bytes` against the client's response-byte share (docs/security.md
 * "Response bytes per client"). The one place every reply path calls, whatever it answers (a
 * resource, a Bundle, an OperationOutcome, a manifest); a no-op on requests admission did not see.
 */
export function chargeResponse(res: Response, bytes: number): void {
  (res.locals as ResponseCharge).chargeResponse?.(bytes);
}
