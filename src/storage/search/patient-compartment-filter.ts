import { patientCompartmentKey, patientCompartmentParams, resourceTypes, type FhirVersion } from '@app/fhir';
import type { Filter } from './filter-clauses';

/**
 * The Patient compartment as queries on the `resources` documents (CompartmentDefinition-patient of
 * the version, https://hl7.org/fhir/R4/compartmentdefinition-patient.html): a resource is in the
 * compartment of Patient/x when one of its type's compartment parameters references Patient/x,
 * which its index records as one entry `*patient|Patient/x` (patient-compartment-key.ts): one
 * equality on the reference index's `{v, c, idx.ref}` prefix.
 */

export interface CompartmentTypes {
  /** Types with at least one compartment parameter. */
  types: string[];
}

const compartmentCache = new Map<FhirVersion, CompartmentTypes>();

export function compartmentTypes(version: FhirVersion): CompartmentTypes {
  let cached = compartmentCache.get(version);
  if (!cached) {
    const types = resourceTypes(version).filter((type) => patientCompartmentParams(version, type).length > 0);
    cached = { types };
    compartmentCache.set(version, cached);
  }
  return cached;
}

/**
 * A resource of one of `types`, tested on the candidates of the compartment's entry, never an
 * index bound: the reference index holds the type after the references, so `t: {$in}` would start
 * a scan range per type and lose the index order of the compartment (docs/storage.md "Search
 * index"). `$expr` keeps the meaning of `t: {$in}` as a filter only, on both engines.
 */
export function typeAmong(types: readonly string[]): Filter {
  return { $expr: { $in: ['$t', [...types]] } };
}

/**
 * Every resource of the compartment of Patient/{id}, the patient itself included: the resources
 * holding its compartment entry (each type held to its own compartment parameters when the entry
 * was extracted: patient-compartment-key.ts), one equality on the references index.
 */
export function patientCompartmentFilter(patientId: string): Filter {
  return { $or: [{ t: 'Patient', id: patientId }, { 'idx.ref': patientCompartmentKey(patientId) }] };
}
