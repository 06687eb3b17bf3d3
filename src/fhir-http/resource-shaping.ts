import type { Request } from 'express';
import {
  OperationOutcomeError,
  SearchError,
  shapedResourceJson,
  type FhirVersion,
  type ParsedSearch,
} from '@app/fhir';
import { parseElements } from '@app/fhir/search/result-parameters';

const SUMMARY_VALUES = ['true', 'false', 'text', 'data', 'count'] as const;

function single(req: Request, name: string): string | undefined {
  const value = req.query[name];
  if (Array.isArray(value)) throw OperationOutcomeError.invalid(`${name} may be given once`);
  return typeof value === 'string' ? value : undefined;
}

/**
 * `_elements` and `_summary` on a read (https://hl7.org/fhir/R4/search.html#elements: "also
 * applies to read"): the same subsets a search serves, tagged SUBSETTED. `_summary=count` and
 * `false` serve the resource whole.
 */
export function shapeResource(req: Request, version: FhirVersion, json: string): string {
  const elementsText = single(req, '_elements');
  const summaryText = single(req, '_summary');
  if (elementsText === undefined && summaryText === undefined) return json;
  let elements: string[] | undefined;
  try {
    elements = elementsText === undefined ? undefined : parseElements(elementsText);
  } catch (error) {
    if (error instanceof SearchError)
      throw new OperationOutcomeError(error.code, error.message, { status: 400 });
    throw error;
  }
  if (summaryText !== undefined && !(SUMMARY_VALUES as readonly string[]).includes(summaryText)) {
    throw OperationOutcomeError.invalid(
      `_summary must be one of ${SUMMARY_VALUES.join(', ')}, not '${summaryText}'`,
    );
  }
  const summary = summaryText as ParsedSearch['summary'];
  const resource = JSON.parse(json) as { resourceType?: unknown };
  // an OperationOutcome (a deleted resource's answer) is never cut
  if (resource.resourceType === 'OperationOutcome') return json;
  return shapedResourceJson(version, json, { elements, summary });
}
