import { ANY_PATIENT_COMPARTMENT_PATTERN, resourceTypes, type FhirVersion } from '@app/fhir';
import type { Filter } from './filter-clauses';
import { compartmentTypes } from './patient-compartment-filter';
import { rangePattern } from './range-regex';

/**
 * The queries of `Patient/$everything` beyond one patient's compartment
 * (patient-compartment-filter.ts): every patient's compartment, the references that point outside
 * it, and the care-date window (`start`/`end`).
 */

/**
 * Every Patient and every resource in the compartment of some Patient (type-level
 * `Patient/$everything` over the caller's scope): it holds a Patient compartment entry
 * (`*patient|Patient/x`, patient-compartment-key.ts), an anchored prefix of the references index.
 */
export function anyPatientCompartmentFilter(): Filter {
  return { $or: [{ t: 'Patient' }, { 'idx.ref': { $regex: ANY_PATIENT_COMPARTMENT_PATTERN } }] };
}

const outsidePatterns = new Map<FhirVersion, string>();
const ID = '[A-Za-z0-9\\-.]{1,64}';

/**
 * The `idx.ref` entries (`${param}|${target}`) that point at a resource of this server whose type
 * has no place in the compartment (Practitioner, Organization, Location, Medication …), stored as
 * `Type/id` (also when written with this server's base URL): what `$everything` adds beside the
 * compartment.
 */
export function outsideReferencePattern(version: FhirVersion): string {
  let pattern = outsidePatterns.get(version);
  if (pattern === undefined) {
    const inCompartment = new Set(compartmentTypes(version).types);
    const outside = resourceTypes(version).filter((type) => !inCompartment.has(type));
    pattern = `^[^|]+\\|(?:${outside.join('|')})/${ID}$`;
    outsidePatterns.set(version, pattern);
  }
  return pattern;
}

/** The targets of entries matching `outsideReferencePattern`, once each. */
export function outsideTargets(entries: readonly string[]): Array<{ type: string; id: string }> {
  const targets = new Map<string, { type: string; id: string }>();
  for (const entry of entries) {
    const target = entry.slice(entry.indexOf('|') + 1);
    const slash = target.indexOf('/');
    targets.set(target, { type: target.slice(0, slash), id: target.slice(slash + 1) });
  }
  return [...targets.values()];
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
