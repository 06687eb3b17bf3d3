import { patientCompartmentParams, resourceTypes, type FhirVersion } from '@app/fhir';
import type { Filter } from './filter-clauses';

/**
 * The Patient compartment as queries on the `resources` documents (CompartmentDefinition-patient of
 * the version, https://hl7.org/fhir/R4/compartmentdefinition-patient.html): a resource is in the
 * compartment of Patient/x when one of its type's compartment parameters references Patient/x,
 * i.e. its `idx.ref` holds `${param}|Patient/x`. One `$in` over the reference index's
 * `{v, c, idx.ref}` prefix.
 */

export interface CompartmentTypes {
  /** Types with at least one compartment parameter. */
  types: string[];
  /** `${param}|` prefixes of every compartment parameter of any type. */
  params: string[];
}

const compartmentCache = new Map<FhirVersion, CompartmentTypes>();

export function compartmentTypes(version: FhirVersion): CompartmentTypes {
  let cached = compartmentCache.get(version);
  if (!cached) {
    const types: string[] = [];
    const params = new Set<string>();
    for (const type of resourceTypes(version)) {
      const codes = patientCompartmentParams(version, type);
      if (codes.length === 0) continue;
      types.push(type);
      for (const code of codes) params.add(code);
    }
    cached = { types, params: [...params] };
    compartmentCache.set(version, cached);
  }
  return cached;
}

/**
 * The `idx.ref` entries by which a resource names Patient/{id} in one of `params` (compartment
 * parameters). One per parameter: a reference written with this server's base URL is stored
 * relative too (docs/storage.md "One stored form of a reference to this server").
 */
export function compartmentReferenceKeys(patientId: string, params: readonly string[]): string[] {
  return params.map((param) => `${param}|Patient/${patientId}`);
}

/**
 * A resource of one of `types`, tested on the candidates of the compartment's references, never
 * an index bound: the reference index holds the type after the references, so `t: {$in}` would
 * start a scan range for every (reference, type) pair, about 40 × 70 (docs/storage.md "Search
 * index"). `$expr` keeps the meaning of `t: {$in}` as a filter only, on both engines.
 */
export function typeAmong(types: readonly string[]): Filter {
  return { $expr: { $in: ['$t', [...types]] } };
}

const allTypesGroups = new Map<FhirVersion, Array<{ types: string[]; params: string[] }>>();

/** The compartment types of the version grouped by their exact list of compartment parameters. */
function typesByParams(version: FhirVersion): Array<{ types: string[]; params: string[] }> {
  let groups = allTypesGroups.get(version);
  if (!groups) {
    const byKey = new Map<string, { types: string[]; params: string[] }>();
    for (const type of compartmentTypes(version).types) {
      const params = [...patientCompartmentParams(version, type)].sort();
      const key = params.join(',');
      const group = byKey.get(key) ?? { types: [], params };
      group.types.push(type);
      byKey.set(key, group);
    }
    groups = [...byKey.values()];
    allTypesGroups.set(version, groups);
  }
  return groups;
}

/**
 * Every resource of the compartment of Patient/{id}, the patient itself included, each type held to
 * its own compartment parameters: the types are grouped by their parameter list (a few dozen
 * groups), all under one `$in` on the reference index.
 */
export function patientCompartmentFilter(version: FhirVersion, patientId: string): Filter {
  const refsOf = (params: readonly string[]) => compartmentReferenceKeys(patientId, params);
  const referencing: Filter = {
    'idx.ref': { $in: refsOf(compartmentTypes(version).params) },
    $or: typesByParams(version).map((group) => ({
      'idx.ref': { $in: refsOf(group.params) },
      ...typeAmong(group.types),
    })),
  };
  return { $or: [{ t: 'Patient', id: patientId }, referencing] };
}
