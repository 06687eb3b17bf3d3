import { OperationOutcomeError } from '@app/fhir';

/** The patch document and the format its Content-Type (or a transaction entry) names. */
export type PatchDocument =
  | { format: 'json-patch'; operations: unknown }
  | { format: 'fhirpath-patch'; parameters: Record<string, unknown> };

const JSON_PATCH_TYPE = 'application/json-patch+json';

/**
 * The document of a PATCH request from its Content-Type: JSON Patch, or FHIRPath Patch
 * (a Parameters resource, https://hl7.org/fhir/R4/fhirpatch.html); any other type is 415.
 */
export function patchDocument(contentType: string | undefined, body: unknown): PatchDocument {
  const type = (contentType ?? '').split(';')[0].trim().toLowerCase();
  if (type === JSON_PATCH_TYPE) return { format: 'json-patch', operations: body };
  if (type === 'application/fhir+json' || type === 'application/json') {
    if (body && typeof body === 'object' && !Array.isArray(body))
      return { format: 'fhirpath-patch', parameters: body as Record<string, unknown> };
    throw OperationOutcomeError.invalid('a FHIRPath Patch body is a Parameters resource');
  }
  throw new OperationOutcomeError(
    'not-supported',
    `Content-Type ${contentType ?? '(none)'} is not a patch format: send ${JSON_PATCH_TYPE} or a Parameters resource as application/fhir+json`,
    { status: 415 },
  );
}
