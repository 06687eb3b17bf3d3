import { OperationOutcomeError } from '@app/fhir';
import type { Request } from 'express';

/**
 * HTTP request → search input. The raw query string is read in order (not Express's parsed object):
 * repeated parameters AND, order is kept for the paging links, and a key such as `name[$gt]` stays
 * the literal, unknown parameter name it is (https://hl7.org/fhir/R4/search.html#combining).
 */
export type SearchPairs = Array<[string, string]>;

export function queryPairs(req: Request): SearchPairs {
  const url = req.originalUrl ?? req.url;
  const question = url.indexOf('?');
  return question < 0 ? [] : [...new URLSearchParams(url.slice(question + 1))];
}

/**
 * `POST …/_search`: the form body (application/x-www-form-urlencoded, parsed by the app's body
 * parser into strings or arrays of strings) after the query string. Anything else is refused.
 */
export function formPairs(body: unknown): SearchPairs {
  if (body === undefined || body === null) return [];
  if (typeof body !== 'object' || Array.isArray(body)) {
    throw OperationOutcomeError.invalid('the _search body must be application/x-www-form-urlencoded');
  }
  const pairs: SearchPairs = [];
  for (const [name, value] of Object.entries(body as Record<string, unknown>)) {
    for (const item of Array.isArray(value) ? value : [value]) {
      if (typeof item !== 'string') {
        throw OperationOutcomeError.invalid(`search parameter '${name}' must have a text value`);
      }
      pairs.push([name, item]);
    }
  }
  return pairs;
}

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
