/** A FHIRPath Patch (https://hl7.org/fhir/R4/fhirpatch.html) replacing what `path` selects with gender `male`. */
export function replaceGenderPatch(path: string) {
  return {
    resourceType: 'Parameters',
    parameter: [
      {
        name: 'operation',
        part: [
          { name: 'type', valueCode: 'replace' },
          { name: 'path', valueString: path },
          { name: 'value', valueCode: 'male' },
        ],
      },
    ],
  };
}

/**
 * The probe's expression: each extra `a` doubles the backtracking of `^(a+)+$` on JavaScript's
 * regex engine (29 runs far past FHIRPATH_TIMEOUT_MS).
 */
export const catastrophicFhirPath = (as: number) =>
  `Patient.where('${'a'.repeat(as)}!'.matches('^(a+)+$')).gender`;
