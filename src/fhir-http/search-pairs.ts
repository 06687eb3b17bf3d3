import { OperationOutcomeError } from '@app/fhir';
import { formPairs, queryPairs, type SearchPairs } from '../modules/fhir-store/search/search-request';

export { queryPairs, type SearchPairs };

/**
 * The parameters of a POST body: a `Parameters` resource (an operation invoked with POST, each
 * primitive `value[x]` as its text, https://hl7.org/fhir/R4/operations.html#request) or a form
 * (`_search`). No body: none.
 */
export function parametersPairs(body: unknown): SearchPairs {
  if (body === undefined || body === null) return [];
  if (typeof body === 'object' && !Array.isArray(body) && Object.keys(body).length === 0) return [];
  const resource = body as { resourceType?: unknown; parameter?: unknown };
  if (resource.resourceType === undefined) return formPairs(body);
  if (resource.resourceType !== 'Parameters') {
    throw OperationOutcomeError.invalid(
      `the body must be a Parameters resource, not ${String(resource.resourceType)}`,
    );
  }
  const parameters = Array.isArray(resource.parameter) ? (resource.parameter as unknown[]) : [];
  return parameters.map((parameter, index): [string, string] => {
    const p = (parameter ?? {}) as Record<string, unknown>;
    const valueKey = Object.keys(p).find((key) => key.startsWith('value'));
    const value = valueKey === undefined ? undefined : p[valueKey];
    if (typeof p.name !== 'string' || !['string', 'number', 'boolean'].includes(typeof value)) {
      throw OperationOutcomeError.invalid(
        `Parameters.parameter[${index}] must have a name and a primitive value[x]`,
        `Parameters.parameter[${index}]`,
      );
    }
    return [p.name, String(value)];
  });
}
