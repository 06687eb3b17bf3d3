/** One problem found in a resource. Codes are FHIR IssueType codes (https://hl7.org/fhir/R4/valueset-issue-type.html). */
export interface ValidationIssue {
  severity: 'error' | 'warning';
  code: 'structure' | 'required' | 'value' | 'invalid' | 'not-found' | 'too-long';
  /** FHIRPath-like element path with indexes, e.g. `Patient.name[0].given[1]`. */
  path: string;
  message: string;
}

export type ValidationIssueCode = ValidationIssue['code'];

export function errorIssue(code: ValidationIssueCode, path: string, message: string): ValidationIssue {
  return { severity: 'error', code, path, message };
}
