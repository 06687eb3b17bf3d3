import type { Model } from 'fhirpath';
import { resourceTypes } from '../definitions/resource-types';
import { fhirpathModel, leadingType } from './fhirpath-expressions';
import type { SearchParamDefinition, VersionSearchDefinitions } from './search-parameter-types';

/**
 * DSTU2 has no HL7 npm package with SearchParameters, so its parameters are DERIVED from STU3
 * (documented approximation):
 * - every DSTU2 resource type that also exists in STU3 reuses each STU3 parameter whose expression
 *   paths exist in DSTU2 (checked against fhirpath.js's DSTU2 model); an expression that fails is
 *   retried with the element renames below (STU3 `subject` was DSTU2 `patient`, `context` was
 *   `encounter` …) and dropped if it still does not fit;
 * - MedicationOrder (DSTU2's MedicationRequest) takes the STU3 MedicationRequest parameters the same
 *   way, plus its own `datewritten` / `prescriber` / `encounter`;
 * - DSTU2-only types (DiagnosticOrder, Order …) get the common parameters only (`_id`, `_lastUpdated`,
 *   `_tag`, `_profile`, `_security`);
 * - the patient compartment is STU3's, restricted to the parameters that survived (`patient` as a
 *   fallback when the type has one).
 */

const STU3_SOURCE_TYPE: Readonly<Record<string, string>> = { MedicationOrder: 'MedicationRequest' };

const ELEMENT_RENAMES: ReadonlyArray<[RegExp, string]> = [
  [/\.requester\.agent\b/g, '.prescriber'],
  [/\.subject\b/g, '.patient'],
  [/\.context\b/g, '.encounter'],
  [/\.authoredOn\b/g, '.dateWritten'],
  [/\.assertedDate\b/g, '.dateRecorded'],
];

const DSTU2_ONLY_PARAMS: Readonly<Record<string, SearchParamDefinition[]>> = {
  MedicationOrder: [
    { code: 'datewritten', type: 'date', targets: [], expressions: ['MedicationOrder.dateWritten'] },
    {
      code: 'prescriber',
      type: 'reference',
      targets: ['Practitioner'],
      expressions: ['MedicationOrder.prescriber'],
    },
    {
      code: 'encounter',
      type: 'reference',
      targets: ['Encounter'],
      expressions: ['MedicationOrder.encounter'],
    },
  ],
};

/** The dotted element names an expression part navigates before its first function or `as`. */
function pathSegments(part: string): string[] {
  const body = part.replace(/^\(*\s*[A-Z][A-Za-z]*/, '');
  const match = /^((?:\.[a-z][A-Za-z0-9]*(?!\())*)/.exec(body);
  return (match?.[1] ?? '').split('.').filter((segment) => segment.length > 0);
}

function typeCodeOf(entry: unknown): string | undefined {
  if (typeof entry === 'string') return entry;
  if (entry && typeof entry === 'object' && 'code' in entry) return String(entry.code);
  return undefined;
}

/** True when `Type.a.b…` exists in the model (complex types and content references followed). */
export function pathExists(model: Model, type: string, segments: readonly string[]): boolean {
  const path2Type = model.path2Type as Record<string, unknown>;
  const choices = model.choiceTypePaths as Record<string, unknown>;
  const elsewhere = model.pathsDefinedElsewhere as Record<string, string>;
  let current = type;
  for (const segment of segments) {
    let path = `${current}.${segment}`;
    if (!(path in path2Type) && !(path in choices) && elsewhere[current]) {
      current = elsewhere[current];
      path = `${current}.${segment}`;
    }
    if (path in choices) return true;
    const code = typeCodeOf(path2Type[path]);
    if (!code) return false;
    current = code === 'BackboneElement' || code === 'Element' ? path : code;
  }
  return true;
}

function adaptExpression(
  model: Model,
  dstu2Type: string,
  part: string,
  stu3Type: string,
): string | undefined {
  const retyped = part.split(stu3Type + '.').join(dstu2Type + '.');
  if (pathExists(model, dstu2Type, pathSegments(retyped))) return retyped;
  let renamed = retyped;
  for (const [pattern, replacement] of ELEMENT_RENAMES) renamed = renamed.replace(pattern, replacement);
  return renamed !== retyped && pathExists(model, dstu2Type, pathSegments(renamed)) ? renamed : undefined;
}

export function deriveDstu2Definitions(stu3: VersionSearchDefinitions): VersionSearchDefinitions {
  const model = fhirpathModel('dstu2');
  const byType = new Map<string, Map<string, SearchParamDefinition>>();
  const patientCompartment = new Map<string, readonly string[]>();
  for (const type of resourceTypes('dstu2')) {
    const stu3Type = STU3_SOURCE_TYPE[type] ?? type;
    const params = new Map<string, SearchParamDefinition>();
    for (const param of stu3.byType.get(stu3Type)?.values() ?? []) {
      const expressions = param.expressions.flatMap((part) => {
        const adapted =
          leadingType(part) === stu3Type ? adaptExpression(model, type, part, stu3Type) : undefined;
        return adapted ? [adapted] : [];
      });
      if (expressions.length > 0) params.set(param.code, { ...param, expressions });
    }
    for (const extra of DSTU2_ONLY_PARAMS[type] ?? []) params.set(extra.code, extra);
    if (params.size > 0) byType.set(type, params);
    const compartment = (stu3.patientCompartment.get(stu3Type) ?? []).filter((code) => params.has(code));
    if (compartment.length === 0 && params.get('patient')?.type === 'reference') compartment.push('patient');
    if (compartment.length > 0) patientCompartment.set(type, compartment);
  }
  return { common: stu3.common, byType, patientCompartment };
}
