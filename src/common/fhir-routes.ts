/** Routes whose errors answer a FHIR OperationOutcome rather than `{ error, message }`. */
const FHIR_ROUTE = /^\/(?:(?:r4|stu3|dstu2)(?:\/|$|\?)|bulk-data\/|v1\/[^/]+\/bulk-export\/)/i;

export function isFhirRoute(path: string): boolean {
  return FHIR_ROUTE.test(path);
}

export const FHIR_JSON = 'application/fhir+json';
