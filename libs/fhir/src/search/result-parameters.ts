import type { FhirVersion } from '../definitions/fhir-version';
import { isResourceType } from '../definitions/resource-types';
import type { IncludeDirective, SortKey } from './parsed-search';
import { SearchError } from './search-error';
import { searchDefinitions, searchParamDefinition } from './search-parameter-registry';
import type { SearchParamType } from './search-parameter-types';

/** Parsing of the result parameters (https://hl7.org/fhir/R4/search.html#return). */

export function parseNonNegativeInteger(name: string, text: string): number {
  if (!/^\d{1,9}$/.test(text))
    throw new SearchError('invalid', `${name} must be a non-negative integer, not '${text}'`);
  return Number(text);
}

/** Parameter types that have a sort key in `idx.srt` (see search-index.ts). */
const SORTABLE_TYPES = new Set<SearchParamType>(['date', 'string', 'number', 'quantity', 'token']);

export function parseSort(version: FhirVersion, type: string | undefined, text: string): SortKey[] {
  return text.split(',').map((item) => {
    const descending = item.startsWith('-');
    const param = descending ? item.slice(1) : item;
    if (param === '_id' || param === '_lastUpdated') return { param, descending };
    const definition = searchParamDefinition(version, type, param);
    if (!definition || !SORTABLE_TYPES.has(definition.type)) {
      throw new SearchError(
        'invalid',
        `Cannot sort by '${param}': not a sortable search parameter of ${type ?? 'all types'}`,
      );
    }
    return { param, descending };
  });
}

export function parseChoice<T extends string>(name: string, text: string, allowed: readonly T[]): T {
  if (!(allowed as readonly string[]).includes(text)) {
    throw new SearchError('invalid', `${name} must be one of ${allowed.join(', ')}, not '${text}'`);
  }
  return text as T;
}

const ELEMENT_NAME = /^([A-Z][A-Za-z]+\.)?[a-z][A-Za-z0-9]*$/;

export function parseElements(text: string): string[] {
  const elements = text.split(',').map((element) => element.trim());
  const invalid = elements.find((element) => !ELEMENT_NAME.test(element));
  if (invalid !== undefined)
    throw new SearchError('invalid', `Invalid element name '${invalid}' in _elements`);
  return elements;
}

export function parseTypes(version: FhirVersion, text: string): string[] {
  const types = text.split(',').map((type) => type.trim());
  const invalid = types.find((type) => !isResourceType(version, type));
  if (invalid !== undefined) throw new SearchError('invalid', `Unknown resource type '${invalid}' in _type`);
  return types;
}

function referenceParamsOf(version: FhirVersion, type: string): string[] {
  return [...(searchDefinitions(version).byType.get(type)?.values() ?? [])]
    .filter((param) => param.type === 'reference')
    .map((param) => param.code);
}

/**
 * `_include` / `_revinclude` values: `*`, `Type:param`, `Type:param:Target`, `Type:*`, and the form
 * of docs/api.md §6, `Type:TargetType` (every reference parameter of Type that can point to TargetType).
 */
export function parseInclude(
  version: FhirVersion,
  name: string,
  text: string,
  iterate: boolean,
): IncludeDirective {
  if (text === '*') return { wildcard: true, params: [], iterate };
  const [sourceType, second, targetType, ...rest] = text.split(':');
  if (!sourceType || !second || rest.length > 0 || !isResourceType(version, sourceType)) {
    throw new SearchError('invalid', `Invalid ${name} value '${text}' (expected Type:param[:Target] or *)`);
  }
  if (targetType !== undefined && !isResourceType(version, targetType)) {
    throw new SearchError('invalid', `Unknown target type '${targetType}' in ${name} '${text}'`);
  }
  if (second === '*')
    return { wildcard: false, sourceType, params: referenceParamsOf(version, sourceType), iterate };
  if (isResourceType(version, second) && targetType === undefined) {
    const params = referenceParamsOf(version, sourceType).filter((code) => {
      const targets = searchParamDefinition(version, sourceType, code)?.targets ?? [];
      return targets.length === 0 || targets.includes(second);
    });
    if (params.length === 0)
      throw new SearchError('invalid', `${sourceType} has no reference to ${second} (${name})`);
    return { wildcard: false, sourceType, params, targetType: second, iterate };
  }
  const definition = searchParamDefinition(version, sourceType, second);
  if (definition?.type !== 'reference') {
    throw new SearchError(
      'invalid',
      `'${second}' is not a reference search parameter of ${sourceType} (${name})`,
    );
  }
  return { wildcard: false, sourceType, params: [second], targetType, iterate };
}
