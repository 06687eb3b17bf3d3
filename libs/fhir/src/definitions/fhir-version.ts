/** FHIR releases the service speaks. The URL segment (`/r4`, `/stu3`, `/dstu2`) selects one. */
export type FhirVersion = 'r4' | 'stu3' | 'dstu2';

export const FHIR_VERSIONS: readonly FhirVersion[] = ['r4', 'stu3', 'dstu2'];

/** Versions whose base StructureDefinitions ship in an HL7 npm package (DSTU2 has none). */
export type DefinedFhirVersion = Exclude<FhirVersion, 'dstu2'>;

/** Maps a URL segment such as `R4`, `stu3` or `DSTU2` (any case) to a version; anything else → undefined. */
export function parseFhirVersion(segment: string): FhirVersion | undefined {
  const lower = segment.toLowerCase();
  return (FHIR_VERSIONS as readonly string[]).includes(lower) ? (lower as FhirVersion) : undefined;
}
