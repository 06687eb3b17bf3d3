import {
  isResourceType,
  isValidId,
  OperationOutcomeError,
  parseFhirVersion,
  type FhirVersion,
} from '@app/fhir';

/** `R4`, `r4`, `STU3`, … → the version; anything else → 404 OperationOutcome (the route does not exist). */
export function versionParam(segment: string): FhirVersion {
  const version = parseFhirVersion(segment);
  if (!version)
    throw OperationOutcomeError.notFound(`unknown FHIR version "${segment}": use r4, stu3 or dstu2`);
  return version;
}

/** A resource type of the version (and of the route's types, when it serves only some) or 404. */
export function typeParam(version: FhirVersion, type: string, only?: readonly string[]): string {
  if (!isResourceType(version, type)) {
    throw OperationOutcomeError.notFound(`unknown resource type "${type}" in ${version.toUpperCase()}`);
  }
  if (only && !only.includes(type)) {
    throw OperationOutcomeError.notFound(`this route serves ${only.join(', ')}, not ${type}`);
  }
  return type;
}

export function idParam(id: string): string {
  if (!isValidId(id)) {
    throw OperationOutcomeError.invalid(`"${id}" is not a valid FHIR id (1–64 of A-Z a-z 0-9 - .)`);
  }
  return id;
}
