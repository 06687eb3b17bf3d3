import { escapeRegex, resourceTypes, type FhirVersion } from '@app/fhir';
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
