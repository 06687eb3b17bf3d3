import {
  isResourceType,
  OperationOutcomeError,
  patientCompartmentKey,
  patientCompartmentParams,
  type FhirVersion,
} from '@app/fhir';
import type { Filter } from './filter-clauses';
import { patientCompartmentFilter } from './patient-compartment-filter';
import type { SearchWithin } from './search-executor';

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
): Filter {
  checkCompartment(version, compartment);
  const params = patientCompartmentParams(version, type);
  if (params.length === 0) {
    throw OperationOutcomeError.invalid(
      `${type} has no place in the Patient compartment in ${version.toUpperCase()} (https://hl7.org/fhir/R4/compartmentdefinition-patient.html)`,
    );
  }
  const referencing: Filter = { 'idx.ref': patientCompartmentKey(patientId) };
  return type === 'Patient' ? { $or: [{ id: patientId }, referencing] } : referencing;
}

/**
 * `GET /{v}/Patient/{id}/*` (https://hl7.org/fhir/R4/http.html#vsearch): every resource of the
 * compartment of Patient/{id}, the patient itself included (as `Patient/{id}/Patient`), each type
 * held to its own compartment parameters (its compartment entry: `patientCompartmentFilter`).
 */
export function allTypesCompartmentFilter(
  version: FhirVersion,
  compartment: string,
  patientId: string,
): Filter {
  checkCompartment(version, compartment);
  return patientCompartmentFilter(patientId);
}

/**
 * A compartment search's restriction for `SearchExecutor.searchPage` (`type` undefined: every type
 * of the compartment, `GET /{v}/Patient/{id}/*`). Refuses what is no served compartment (400) or a
 * type outside it, before anything is read.
 */
export function compartmentWithin(
  version: FhirVersion,
  compartment: string,
  id: string,
  type: string | undefined,
): SearchWithin {
  return {
    restriction:
      type === undefined
        ? allTypesCompartmentFilter(version, compartment, id)
        : compartmentSearchFilter(version, compartment, id, type),
  };
}
