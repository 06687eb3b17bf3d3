import { OperationOutcomeError } from '@app/fhir';

/** Issue 6: a Group export covers at most this many patients. */
export const MAX_GROUP_MEMBERS = 10_000;

const PATIENT_REFERENCE = /(?:^|\/)Patient\/([A-Za-z0-9\-.]{1,64})(?:\/_history\/[^/]+)?$/;

/**
 * Logical ids of the Patients a Group lists (`member[].entity.reference`, relative or absolute),
 * skipping members marked inactive and non-Patient members
 * (https://hl7.org/fhir/R4/group.html, https://hl7.org/fhir/uv/bulkdata/export.html#endpoint---group-of-patients).
 */
export function groupPatientIds(groupJson: string): string[] {
  const group = JSON.parse(groupJson) as { member?: unknown };
  const members = Array.isArray(group.member) ? (group.member as unknown[]) : [];
  const ids = new Set<string>();
  for (const member of members) {
    if (typeof member !== 'object' || member === null) continue;
    const m = member as { inactive?: unknown; entity?: { reference?: unknown } };
    if (m.inactive === true || typeof m.entity?.reference !== 'string') continue;
    const match = PATIENT_REFERENCE.exec(m.entity.reference);
    if (match) ids.add(match[1]);
  }
  if (ids.size > MAX_GROUP_MEMBERS) {
    throw new OperationOutcomeError(
      'too-costly',
      `the Group has ${ids.size} patient members; a Group export covers at most ${MAX_GROUP_MEMBERS}`,
      { status: 400 },
    );
  }
  return [...ids].sort();
}
