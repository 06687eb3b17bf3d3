import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { FhirVersion } from '../definitions/fhir-version';
import { resourceTypes } from '../definitions/resource-types';
import { deriveDstu2Definitions } from './dstu2-search-parameters';
import { compileExpression, leadingType, splitUnion } from './fhirpath-expressions';
import type {
  CompiledExpression,
  CompiledSearchParam,
  SearchParamDefinition,
  SearchParamType,
  VersionSearchDefinitions,
} from './search-parameter-types';

export type { VersionSearchDefinitions } from './search-parameter-types';

/**
 * Search parameter definitions per FHIR version, read lazily from the HL7 packages
 * (hl7.fhir.r4.examples, hl7.fhir.r3.examples: every base SearchParameter) and derived for DSTU2
 * (see dstu2-search-parameters.ts). Each FHIRPath expression is compiled once, on first use of its type.
 */

interface RawSearchParameter {
  id: string;
  url?: string;
  code: string;
  type: SearchParamType;
  base?: string[];
  expression?: string;
  target?: string[];
  description?: string;
}

/** Profile/extension/example parameters shipped beside the base ones in the packages. */
const NON_BASE_ID = /^(example|[a-z0-9]+-(extensions|genetic|11179)-)/;
/** Searchable by other means (`_content`, `_text`) or not supported (`_query`, `_filter`, composites). */
const UNSUPPORTED_CODES = new Set(['_query', '_filter', '_text', '_content', '_list', '_has', '_type']);
const UNSUPPORTED_TYPES = new Set<SearchParamType>(['composite', 'special']);
const COMMON_BASES = new Set(['Resource', 'DomainResource']);

function packageDirectory(version: 'r4' | 'stu3'): string {
  const name = version === 'r4' ? 'hl7.fhir.r4.examples' : 'hl7.fhir.r3.examples';
  return dirname(require.resolve(`${name}/package.json`));
}

function readJsonFiles<T>(directory: string, prefix: string): T[] {
  return readdirSync(directory)
    .filter((file) => file.startsWith(prefix) && file.endsWith('.json'))
    .map((file) => JSON.parse(readFileSync(join(directory, file), 'utf8')) as T);
}

function firstSentence(description: string | undefined): string | undefined {
  return description
    ?.split('\n')
    .find((line) => line.trim().length > 0 && !line.startsWith('*'))
    ?.trim();
}

function addParam(
  byType: Map<string, Map<string, SearchParamDefinition>>,
  type: string,
  definition: SearchParamDefinition,
): void {
  let params = byType.get(type);
  if (!params) byType.set(type, (params = new Map()));
  params.set(definition.code, definition);
}

function loadPackagedDefinitions(version: 'r4' | 'stu3'): VersionSearchDefinitions {
  const directory = packageDirectory(version);
  const common = new Map<string, SearchParamDefinition>();
  const byType = new Map<string, Map<string, SearchParamDefinition>>();
  const knownTypes = new Set(resourceTypes(version));
  for (const raw of readJsonFiles<RawSearchParameter>(directory, 'SearchParameter-')) {
    if (NON_BASE_ID.test(raw.id) || !raw.expression || !raw.base) continue;
    if (UNSUPPORTED_CODES.has(raw.code) || UNSUPPORTED_TYPES.has(raw.type)) continue;
    const parts = splitUnion(raw.expression);
    for (const base of raw.base) {
      const isCommon = COMMON_BASES.has(base);
      if (!isCommon && !knownTypes.has(base)) continue;
      const expressions = parts.filter((part) => {
        const type = leadingType(part);
        return isCommon ? type !== undefined && COMMON_BASES.has(type) : type === base;
      });
      if (expressions.length === 0) continue;
      const definition: SearchParamDefinition = {
        code: raw.code,
        type: raw.type,
        description: firstSentence(raw.description),
        targets: raw.target ?? [],
        expressions,
        url: raw.url,
      };
      if (isCommon) common.set(raw.code, definition);
      else addParam(byType, base, definition);
    }
  }
  return { common, byType, patientCompartment: loadPatientCompartment(directory) };
}

interface RawCompartmentDefinition {
  resource?: Array<{ code: string; param?: string[] }>;
}

function loadPatientCompartment(directory: string): Map<string, readonly string[]> {
  const compartment = new Map<string, readonly string[]>();
  const raw = JSON.parse(
    readFileSync(join(directory, 'CompartmentDefinition-patient.json'), 'utf8'),
  ) as RawCompartmentDefinition;
  for (const entry of raw.resource ?? []) {
    if (entry.param?.length) compartment.set(entry.code, entry.param);
  }
  return compartment;
}

const definitionsByVersion = new Map<FhirVersion, VersionSearchDefinitions>();

/** All search definitions of a version, loaded on first use and then cached. */
export function searchDefinitions(version: FhirVersion): VersionSearchDefinitions {
  let definitions = definitionsByVersion.get(version);
  if (!definitions) {
    definitions =
      version === 'dstu2'
        ? deriveDstu2Definitions(searchDefinitions('stu3'))
        : loadPackagedDefinitions(version);
    definitionsByVersion.set(version, definitions);
  }
  return definitions;
}

/** The definition of one parameter for a type (type-specific first, then common); undefined if unknown. */
export function searchParamDefinition(
  version: FhirVersion,
  type: string | undefined,
  code: string,
): SearchParamDefinition | undefined {
  const definitions = searchDefinitions(version);
  return (type ? definitions.byType.get(type)?.get(code) : undefined) ?? definitions.common.get(code);
}

/** CapabilityStatement helper: every parameter a type supports (common ones included), sorted by name. */
export function searchParamsFor(
  version: FhirVersion,
  type: string,
): Array<{
  name: string;
  type: SearchParamType;
  documentation?: string;
  definition?: string;
  targets: readonly string[];
}> {
  const definitions = searchDefinitions(version);
  const params = [...definitions.common.values(), ...(definitions.byType.get(type)?.values() ?? [])];
  return params
    .map((param) => ({
      name: param.code,
      type: param.type,
      documentation: param.description,
      definition: param.url,
      targets: param.targets,
    }))
    .sort((a, b) => a.name.localeCompare(b.name));
}

/** Search parameters that place a resource of `type` in a patient's compartment ([] when none). */
export function patientCompartmentParams(version: FhirVersion, type: string): string[] {
  return [...(searchDefinitions(version).patientCompartment.get(type) ?? [])];
}

/** Parameters evaluated at write time for one type, grouped by the resource element they start from. */
export interface CompiledTypeParams {
  readonly params: readonly CompiledSearchParam[];
  /** First element (`code`, `value`, `meta` …) → (param, expression) pairs reading it. */
  readonly byElement: ReadonlyMap<string, ReadonlyArray<[CompiledSearchParam, CompiledExpression]>>;
  /** Pairs whose first element is not statically known: always evaluated. */
  readonly always: ReadonlyArray<[CompiledSearchParam, CompiledExpression]>;
}

/** Codes stored in top-level document fields (`id`, `lu`) rather than in `idx`. */
const TOP_LEVEL_CODES = new Set(['_id', '_lastUpdated']);
const compiledByVersion = new Map<FhirVersion, Map<string, CompiledTypeParams>>();

export function compiledParamsFor(version: FhirVersion, type: string): CompiledTypeParams {
  let byType = compiledByVersion.get(version);
  if (!byType) compiledByVersion.set(version, (byType = new Map()));
  let compiled = byType.get(type);
  if (compiled) return compiled;
  const definitions = searchDefinitions(version);
  const sources = [...definitions.common.values(), ...(definitions.byType.get(type)?.values() ?? [])];
  const params: CompiledSearchParam[] = [];
  const byElement = new Map<string, Array<[CompiledSearchParam, CompiledExpression]>>();
  const always: Array<[CompiledSearchParam, CompiledExpression]> = [];
  for (const source of sources) {
    if (TOP_LEVEL_CODES.has(source.code)) continue;
    const expressions = source.expressions.flatMap((part) => {
      const expression = compileExpression(version, part);
      return expression ? [expression] : [];
    });
    const param: CompiledSearchParam = { ...source, compiled: expressions };
    params.push(param);
    for (const expression of expressions) {
      if (!expression.firstElement) {
        always.push([param, expression]);
        continue;
      }
      let list = byElement.get(expression.firstElement);
      if (!list) byElement.set(expression.firstElement, (list = []));
      list.push([param, expression]);
    }
  }
  compiled = { params, byElement, always };
  byType.set(type, compiled);
  return compiled;
}
