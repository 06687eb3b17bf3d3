/** The FHIR answer type and path checks live in src/fhir-http; re-exported for the store's services. */
export type { FhirReply } from '../../fhir-http/fhir-reply';
export { idParam, typeParam, versionParam } from '../../fhir-http/path-params';
