import { isFhirPath } from '../fhir-http/fhir-route-state';

/**
 * Whether a path lies under a FHIR base declared by a `@FhirRoute()` (src/fhir-http), for the
 * middleware that runs before routing (CORS, Cache-Control, body limits). After routing, the
 * route's own metadata decides (`isFhirRequest`).
 */
export function isFhirRoute(path: string): boolean {
  return isFhirPath(path);
}

export const FHIR_JSON = 'application/fhir+json';
