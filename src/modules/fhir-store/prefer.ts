import { issue, operationOutcome } from '@app/fhir';
import type { FhirReply } from '../../fhir-http/fhir-reply';

/**
 * The `Prefer` header of the FHIR write interactions (https://hl7.org/fhir/R4/http.html#ops):
 * `return=minimal` (no body), `return=representation` (the resource, the default here) or
 * `return=OperationOutcome`; and `handling=strict|lenient` for unknown search parameters.
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

/** `handling=lenient` asked for: unknown parameters are ignored rather than refused. */
export function isLenientHandling(prefer: string | undefined): boolean {
  return /(?:^|[,;\s])handling\s*=\s*lenient\b/i.test(prefer ?? '');
}

/**
 * The reply of a create/update/patch shaped by `Prefer: return=…`: status and headers (Location,
 * ETag, Last-Modified) stay; the body is the resource, nothing, or an OperationOutcome saying what
 * was done.
 */
export function applyReturnPreference(reply: FhirReply, prefer: string | undefined, done: string): FhirReply {
  switch (returnPreference(prefer)) {
    case 'representation':
      return reply;
    case 'minimal':
      return { ...reply, body: '' };
    case 'OperationOutcome':
      return {
        ...reply,
        body: operationOutcome([issue('informational', done, { severity: 'information' })]),
      };
  }
}
