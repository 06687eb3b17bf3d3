/** One problem found in a resource. Codes are FHIR IssueType codes (https://hl7.org/fhir/R4/valueset-issue-type.html). */
export interface ValidationIssue {
  /** Warnings and information never refuse a write; only errors do. */
  severity: 'error' | 'warning' | 'information';
  code:
    | 'structure'
    | 'required'
    | 'value'
    | 'invalid'
    | 'not-found'
    | 'too-long'
    | 'invariant'
    | 'code-invalid'
    | 'informational';
  /** FHIRPath-like element path with indexes, e.g. `Patient.name[0].given[1]`. */
  path: string;
  message: string;
  /** The rule broken: an invariant key (`per-1`), a bound ValueSet URL, a code system URL. */
  rule?: string;
}

export type ValidationIssueCode = ValidationIssue['code'];

export function errorIssue(
  code: ValidationIssueCode,
  path: string,
  message: string,
  rule?: string,
): ValidationIssue {
  return rule === undefined
    ? { severity: 'error', code, path, message }
    : { severity: 'error', code, path, message, rule };
}
