import type { FhirVersion } from '../definitions/fhir-version';
import type { IssueCode, OperationOutcome, OutcomeIssue } from './operation-outcome';

/**
 * Issue codes R4 added (https://hl7.org/fhir/R4/valueset-issue-type.html) that STU3 and DSTU2 do not
 * have (https://hl7.org/fhir/STU3/valueset-issue-type.html, https://hl7.org/fhir/DSTU2/valueset-issue-type.html),
 * each with the nearest older code. A strict client refuses an unknown code (HAPI: HAPI-1821).
 */
const BEFORE_R4: Partial<Record<IssueCode, IssueCode>> = {
  deleted: 'not-found',
  'multiple-matches': 'processing',
};

/** The issue code as a version knows it. */
export function issueCodeIn(version: FhirVersion, code: IssueCode): IssueCode {
  return version === 'r4' ? code : (BEFORE_R4[code] ?? code);
}

/**
 * The outcome in a version's shape: issue codes it has, and in DSTU2 no `issue.expression` (added in
 * STU3; DSTU2 has `location` only, https://hl7.org/fhir/DSTU2/operationoutcome.html). The same object
 * when nothing changes.
 */
export function outcomeIn(version: FhirVersion, outcome: OperationOutcome): OperationOutcome {
  const differs = (i: OutcomeIssue) =>
    BEFORE_R4[i.code] !== undefined || (version === 'dstu2' && i.expression !== undefined);
  if (version === 'r4' || !outcome.issue.some(differs)) return outcome;
  return {
    ...outcome,
    issue: outcome.issue.map((i) => {
      const { expression, ...rest } = i;
      const kept = version === 'dstu2' ? rest : { ...rest, ...(expression ? { expression } : {}) };
      return { ...kept, code: issueCodeIn(version, i.code) };
    }),
  };
}
