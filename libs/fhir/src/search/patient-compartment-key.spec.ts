import { extractIndex } from './index-extraction';
import { patientCompartmentKey, patientCompartmentKeys } from './patient-compartment-key';

describe('Patient compartment entries', () => {
  it("one per Patient a type's own compartment parameters reference, in every version", () => {
    expect(patientCompartmentKey('p1')).toBe('*patient|Patient/p1');
    const refs = [
      'subject|Patient/p1',
      'patient|Patient/p1',
      'performer|Patient/p2',
      'encounter|Encounter/e1',
    ];
    expect(patientCompartmentKeys('r4', 'Observation', refs).sort()).toEqual([
      '*patient|Patient/p1',
      '*patient|Patient/p2',
    ]);
    // `focus` places no resource in a compartment; another server's Patient is no compartment
    expect(
      patientCompartmentKeys('r4', 'Observation', [
        'focus|Patient/p3',
        'subject|http://other.example/Patient/p4',
      ]),
    ).toEqual([]);
    // a type without compartment parameters (Practitioner) has none
    expect(patientCompartmentKeys('r4', 'Practitioner', ['subject|Patient/p1'])).toEqual([]);
    expect(patientCompartmentKeys('stu3', 'Condition', ['patient|Patient/s1'])).toEqual([
      '*patient|Patient/s1',
    ]);
    expect(patientCompartmentKeys('dstu2', 'Condition', ['patient|Patient/d1'])).toEqual([
      '*patient|Patient/d1',
    ]);
  });

  it('are written by the index extraction beside the references', () => {
    const observation = {
      resourceType: 'Observation',
      status: 'final',
      code: { text: 'x' },
      subject: { reference: 'Patient/p1' },
      focus: [{ reference: 'Patient/p9' }],
    };
    const refs = extractIndex('r4', observation, { fullText: false }).ref ?? [];
    expect(refs).toContain('*patient|Patient/p1');
    expect(refs).not.toContain('*patient|Patient/p9');
    // a Patient is in the compartment of the Patient it links to
    const patient = {
      resourceType: 'Patient',
      link: [{ other: { reference: 'Patient/p2' }, type: 'seealso' }],
    };
    expect(extractIndex('r4', patient, { fullText: false }).ref).toContain('*patient|Patient/p2');
    // a Practitioner references no compartment
    const practitioner = { resourceType: 'Practitioner', name: [{ family: 'Doe' }] };
    expect(extractIndex('r4', practitioner, { fullText: false }).ref ?? []).toEqual([]);
  });
});
