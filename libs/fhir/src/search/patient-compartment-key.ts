import type { FhirVersion } from '../definitions/fhir-version';
import { patientCompartmentParams } from './search-parameter-registry';
import { escapeRegex } from './text-normalization';

/**
 * The `idx.ref` code of a resource's membership in a Patient compartment
 * (https://hl7.org/fhir/R4/compartmentdefinition-patient.html): `*patient|Patient/x` beside the
 * `${param}|Patient/x` entries that place it there. A compartment is then one equality on the
 * references index, which holds `(t, lu, id)` after the reference: its resources by type, newest
 * first, read in index order, where the parameters' own entries are an `$in` of one value per
 * compartment parameter (22 in R4) that no engine reads in one order. `*` is no character of a
 * search parameter code, so no reference search can name it.
 */
export const PATIENT_COMPARTMENT_CODE = '*patient';

/** The entry naming Patient/{id}'s compartment. */
export function patientCompartmentKey(patientId: string): string {
  return `${PATIENT_COMPARTMENT_CODE}|Patient/${patientId}`;
}

/**
 * An anchored pattern of every compartment entry, whatever the Patient: a bounded prefix of the
 * references index (a resource in some Patient compartment).
 */
export const ANY_PATIENT_COMPARTMENT_PATTERN = `^${escapeRegex(patientCompartmentKey(''))}`;

const PATIENT_TARGET = '|Patient/';

/**
 * The compartment entries of a resource of `type` whose reference entries are `refs`: one per
 * Patient that one of the type's own compartment parameters references (relative `Patient/x`, the
 * one stored form of a reference to this server).
 */
export function patientCompartmentKeys(version: FhirVersion, type: string, refs: Iterable<string>): string[] {
  const params = patientCompartmentParams(version, type);
  if (params.length === 0) return [];
  const keys = new Set<string>();
  for (const entry of refs) {
    const at = entry.indexOf(PATIENT_TARGET);
    if (at <= 0 || !params.includes(entry.slice(0, at))) continue;
    keys.add(`${PATIENT_COMPARTMENT_CODE}${entry.slice(at)}`);
  }
  return [...keys];
}
