import { errorIssue, type ValidationIssue } from './validation-issue';

type JsonObject = Record<string, unknown>;

/**
 * A composite search parameter combines other parameters: it needs at least two components
 * (https://hl7.org/fhir/R4/searchparameter.html#composite; the reference validator's SearchParameter rule).
 */
export function checkSearchParameter(parameter: JsonObject, path: string, issues: ValidationIssue[]): void {
  if (parameter.type !== 'composite') return;
  const components = Array.isArray(parameter.component) ? parameter.component.length : 0;
  if (components < 2)
    issues.push(
      errorIssue(
        'invalid',
        `${path}.component`,
        `A composite SearchParameter must define two or more components (found ${components})`,
        'searchparameter-composite',
      ),
    );
}
