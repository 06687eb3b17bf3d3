import { OperationOutcomeError } from '@app/fhir';
import { groupPatientIds, MAX_GROUP_MEMBERS } from './group-members';

describe('groupPatientIds', () => {
  it('takes active Patient members, relative or absolute, deduplicated', () => {
    const group = {
      resourceType: 'Group',
      member: [
        { entity: { reference: 'Patient/b' } },
        { entity: { reference: 'https://example.org/fhir/Patient/a/_history/2' } },
        { entity: { reference: 'Patient/b' } },
        { entity: { reference: 'Practitioner/x' } },
        { entity: { reference: 'Patient/c' }, inactive: true },
        { entity: { display: 'no reference' } },
      ],
    };
    expect(groupPatientIds(JSON.stringify(group))).toEqual(['a', 'b']);
  });

  it('handles a Group without members', () => {
    expect(groupPatientIds('{"resourceType":"Group"}')).toEqual([]);
  });

  it(`refuses more than ${MAX_GROUP_MEMBERS} patients`, () => {
    const member = Array.from({ length: MAX_GROUP_MEMBERS + 1 }, (_, i) => ({
      entity: { reference: `Patient/p${i}` },
    }));
    expect(() => groupPatientIds(JSON.stringify({ resourceType: 'Group', member }))).toThrow(
      OperationOutcomeError,
    );
  });
});
