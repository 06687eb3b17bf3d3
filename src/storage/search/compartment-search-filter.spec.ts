import { OperationOutcomeError } from '@app/fhir';
import { allTypesCompartmentFilter, compartmentSearchFilter } from './compartment-search-filter';

function refused(run: () => unknown): OperationOutcomeError {
  try {
    run();
  } catch (error) {
    if (error instanceof OperationOutcomeError) return error;
    throw error;
  }
  throw new Error('not refused');
}

describe('compartment search', () => {
  it("restricts a type to the Patient's compartment entry (its own parameters: patient-compartment-key.ts)", () => {
    const filter = compartmentSearchFilter('r4', 'Patient', 'p1', 'Observation') as any;
    // one equality: the references index reads it in order
    expect(filter).toEqual({ 'idx.ref': '*patient|Patient/p1' });
    expect(compartmentSearchFilter('dstu2', 'Patient', 'p1', 'Encounter')).toEqual({
      'idx.ref': '*patient|Patient/p1',
    });
  });

  it('Patient/{id}/Patient is the patient itself or one that links to it', () => {
    const filter = compartmentSearchFilter('r4', 'Patient', 'p1', 'Patient') as any;
    expect(filter.$or).toEqual([{ id: 'p1' }, { 'idx.ref': '*patient|Patient/p1' }]);
  });

  it('refuses the other compartments, non-compartments, and types outside the compartment', () => {
    for (const compartment of ['Encounter', 'Practitioner', 'RelatedPerson', 'Device']) {
      const error = refused(() => compartmentSearchFilter('r4', compartment, 'x', 'Observation'));
      expect(error.status).toBe(400);
      expect(error.message).toContain('not supported');
    }
    expect(refused(() => compartmentSearchFilter('r4', 'Observation', 'x', 'Patient')).status).toBe(400);
    const outside = refused(() => compartmentSearchFilter('r4', 'Patient', 'x', 'Practitioner'));
    expect(outside.status).toBe(400);
    expect(outside.message).toContain('Patient compartment');
  });

  it('Patient/{id}/*: the patient, and every resource holding its compartment entry', () => {
    const filter = allTypesCompartmentFilter('r4', 'Patient', 'p1') as any;
    expect(filter.$or).toEqual([{ t: 'Patient', id: 'p1' }, { 'idx.ref': '*patient|Patient/p1' }]);
    expect(refused(() => allTypesCompartmentFilter('r4', 'Encounter', 'e1')).status).toBe(400);
  });
});
