import {
  escapeRegex,
  isResourceType,
  OperationOutcomeError,
  parseFhirDateRange,
  patientCompartmentParams,
  resourceTypes,
  type FhirVersion,
} from '@app/fhir';
import type { Filter } from '../../../storage/search/filter-clauses';
import {
  compartmentReferenceKeys,
  compartmentTypes,
  patientCompartmentFilter,
} from '../../../storage/search/patient-compartment-filter';
import { rangePattern } from '../../../storage/search/range-regex';

export {
  compartmentFilter,
  compartmentReferenceKeys,
  compartmentTypes,
  typeAmong,
  type CompartmentTypes,
} from '../../../storage/search/patient-compartment-filter';

/** The compartments FHIR defines (https://hl7.org/fhir/R4/compartmentdefinition.html). */
export const COMPARTMENT_TYPES = ['Patient', 'Encounter', 'RelatedPerson', 'Practitioner', 'Device'];

/** Only the Patient compartment is served: another compartment or a type that is none → 400. */
function checkCompartment(version: FhirVersion, compartment: string): void {
  if (!isResourceType(version, compartment)) {
    throw OperationOutcomeError.notFound(
      `unknown resource type "${compartment}" in ${version.toUpperCase()}`,
    );
  }
  if (compartment !== 'Patient') {
    throw new OperationOutcomeError(
      'not-supported',
      COMPARTMENT_TYPES.includes(compartment)
        ? `the ${compartment} compartment is not supported: only Patient/{id}/{type} compartment searches are`
        : `${compartment} is not a compartment: compartment searches are Patient/{id}/{type}`,
      { status: 400 },
    );
  }
}

/**
 * The resources of `type` in the compartment of Patient/{id}, for a compartment search
 * `GET /{v}/Patient/{id}/{type}` (https://hl7.org/fhir/R4/http.html#vsearch): one of the type's
 * compartment parameters references the patient; for Patient, the patient itself too. Only the
 * Patient compartment is served: the others answer 400 (docs/api.md).
 */
export function compartmentSearchFilter(
  version: FhirVersion,
  compartment: string,
  patientId: string,
  type: string,
  serviceBase: string,
): Filter {
  checkCompartment(version, compartment);
  const params = patientCompartmentParams(version, type);
  if (params.length === 0) {
    throw OperationOutcomeError.invalid(
      `${type} has no place in the Patient compartment in ${version.toUpperCase()} (https://hl7.org/fhir/R4/compartmentdefinition-patient.html)`,
    );
  }
  const referencing: Filter = {
    'idx.ref': { $in: compartmentReferenceKeys(version, patientId, serviceBase, params) },
  };
  return type === 'Patient' ? { $or: [{ id: patientId }, referencing] } : referencing;
}

/**
 * `GET /{v}/Patient/{id}/*` (https://hl7.org/fhir/R4/http.html#vsearch): every resource of the
 * compartment of Patient/{id}, the patient itself included (as `Patient/{id}/Patient`), each type
 * held to its own compartment parameters (`patientCompartmentFilter`).
 */
export function allTypesCompartmentFilter(
  version: FhirVersion,
  compartment: string,
  patientId: string,
  serviceBase: string,
): Filter {
  checkCompartment(version, compartment);
  return patientCompartmentFilter(version, patientId, serviceBase);
}

/**
 * Every Patient and every resource in the compartment of some Patient (type-level
 * `Patient/$everything` over the caller's scope): a compartment parameter references a Patient.
 */
export function anyPatientCompartmentFilter(version: FhirVersion, serviceBase: string): Filter {
  const { types, params } = compartmentTypes(version);
  const prefix = escapeRegex(`${serviceBase}/${version}/`);
  const pattern = `^(?:${params.map(escapeRegex).join('|')})\\|(?:${prefix})?Patient/${ID}$`;
  return { $or: [{ t: 'Patient' }, { t: { $in: types }, 'idx.ref': { $regex: pattern } }] };
}

const outsidePatterns = new Map<string, string>();
const ID = '[A-Za-z0-9\\-.]{1,64}';

/**
 * The `idx.ref` entries (`${param}|${target}`) that point at a resource whose type has no place in
 * the compartment (Practitioner, Organization, Location, Medication …), as `Type/id` or with this
 * server's base: what `$everything` adds beside the compartment.
 */
export function outsideReferencePattern(version: FhirVersion, serviceBase: string): string {
  const key = `${version} ${serviceBase}`;
  let pattern = outsidePatterns.get(key);
  if (pattern === undefined) {
    const inCompartment = new Set(compartmentTypes(version).types);
    const outside = resourceTypes(version).filter((type) => !inCompartment.has(type));
    const prefix = escapeRegex(`${serviceBase}/${version}/`);
    pattern = `^[^|]+\\|(?:${prefix})?(?:${outside.join('|')})/${ID}$`;
    outsidePatterns.set(key, pattern);
  }
  return pattern;
}

/** The targets of entries matching `outsideReferencePattern`, once each. */
export function outsideTargets(
  entries: readonly string[],
  serviceBase: string,
  version: FhirVersion,
): Array<{ type: string; id: string }> {
  const prefix = `${serviceBase}/${version}/`;
  const targets = new Map<string, { type: string; id: string }>();
  for (const entry of entries) {
    let target = entry.slice(entry.indexOf('|') + 1);
    if (target.startsWith(prefix)) target = target.slice(prefix.length);
    const slash = target.indexOf('/');
    targets.set(target, { type: target.slice(0, slash), id: target.slice(slash + 1) });
  }
  return [...targets.values()];
}

export interface EverythingWindow {
  count: number;
  skip: number;
  types?: string[];
  since?: Date;
  start?: Date;
  end?: Date;
  /** Parameters this operation does not know (reported, not fatal). */
  unknown: string[];
}

const IGNORED = new Set(['_format', '_pretty']);

function wholeNumber(name: string, value: string, max: number, clamp: boolean): number {
  if (!/^\d{1,9}$/.test(value))
    throw OperationOutcomeError.invalid(`${name} must be a whole number, not '${value}'`);
  const number = Number(value);
  if (number <= max) return number;
  if (clamp) return max;
  throw new OperationOutcomeError('too-costly', `${name} may be at most ${max}`, { status: 400 });
}

function date(name: string, value: string): { lo: Date; hi: Date } {
  const range = parseFhirDateRange(value);
  if (!range) throw OperationOutcomeError.invalid(`${name} must be a FHIR date or dateTime, not '${value}'`);
  return range;
}

/** `$everything` parameters (https://hl7.org/fhir/R4/patient-operation-everything.html). */
export function parseEverythingParams(
  version: FhirVersion,
  pairs: ReadonlyArray<[string, string]>,
  limits: { defaultCount: number; maxCount: number; maxSkip: number },
): EverythingWindow {
  const window: EverythingWindow = { count: limits.defaultCount, skip: 0, unknown: [] };
  const known = new Set(resourceTypes(version));
  for (const [name, value] of pairs) {
    switch (name) {
      case '_count':
        window.count = wholeNumber('_count', value, limits.maxCount, true);
        break;
      case '_skip':
        window.skip = wholeNumber('_skip', value, limits.maxSkip, false);
        break;
      case '_type': {
        const types = value.split(',').map((type) => type.trim());
        const unknownType = types.find((type) => !known.has(type));
        if (unknownType !== undefined)
          throw OperationOutcomeError.invalid(`unknown resource type '${unknownType}' in _type`);
        window.types = [...(window.types ?? []), ...types];
        break;
      }
      case '_since':
        window.since = date('_since', value).lo;
        break;
      case 'start':
        window.start = date('start', value).lo;
        break;
      case 'end':
        window.end = date('end', value).hi;
        break;
      default:
        if (!IGNORED.has(name)) window.unknown.push(name);
    }
  }
  // an empty care period would answer only the resources without care dates: a mistake to report
  if (window.start && window.end && window.start > window.end)
    throw OperationOutcomeError.invalid(
      `start (${window.start.toISOString()}) is after end (${window.end.toISOString()})`,
    );
  return window;
}

const ANY_PARAM = '[^|]+\\|';
const ISO_WIDTH = 24;

/**
 * `start`/`end` (care dates, not record dates): a resource with clinical dates must have one that
 * begins at or before `end` and one that ends at or after `start` (the two may come from different
 * date parameters of the resource: a documented approximation). Resources without any clinical
 * date (Practitioner, Medication …) always stay.
 */
export function careDateCondition(start: Date | undefined, end: Date | undefined): Filter | undefined {
  if (!start && !end) return undefined;
  const bounds: Filter[] = [];
  if (end) {
    const pattern = rangePattern(
      ANY_PARAM,
      undefined,
      { value: end.toISOString(), inclusive: true },
      ISO_WIDTH,
      'digits',
    );
    bounds.push({ 'idx.dtl': { $regex: pattern } });
  }
  if (start) {
    const pattern = rangePattern(
      ANY_PARAM,
      { value: start.toISOString(), inclusive: true },
      undefined,
      ISO_WIDTH,
      'digits',
    );
    bounds.push({ 'idx.dth': { $regex: pattern } });
  }
  return { $or: [{ 'idx.dtl': { $exists: false } }, { $and: bounds }] };
}
