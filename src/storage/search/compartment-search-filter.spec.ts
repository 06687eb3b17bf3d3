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
  it('restricts a type to the references of its Patient compartment parameters, one stored form each', () => {
    const filter = compartmentSearchFilter('r4', 'Patient', 'p1', 'Observation') as any;
    const refs: string[] = filter['idx.ref'].$in;
    // R4 CompartmentDefinition-patient: Observation is in by subject and performer; a reference
    // written with this server's base URL is stored relative, so only that form is looked up
    expect(refs.sort()).toEqual(['performer|Patient/p1', 'subject|Patient/p1']);
  });

  it('DSTU2 uses its own compartment parameters (Encounter.patient)', () => {
    const filter = compartmentSearchFilter('dstu2', 'Patient', 'p1', 'Encounter') as any;
    expect(filter['idx.ref'].$in).toContain('patient|Patient/p1');
  });

  it('Patient/{id}/Patient is the patient itself or one that links to it', () => {
    const filter = compartmentSearchFilter('r4', 'Patient', 'p1', 'Patient') as any;
    expect(filter.$or[0]).toEqual({ id: 'p1' });
    expect(filter.$or[1]['idx.ref'].$in).toContain('link|Patient/p1');
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

  it('Patient/{id}/*: the patient, and each type held to its own compartment parameters', () => {
    const filter = allTypesCompartmentFilter('r4', 'Patient', 'p1') as any;
    expect(filter.$or[0]).toEqual({ t: 'Patient', id: 'p1' });
    const groups: any[] = filter.$or[1].$or;
    const groupOf = (type: string) => groups.filter((g) => g.$expr.$in[1].includes(type));
    // every type in exactly one group
    expect(groupOf('Observation')).toHaveLength(1);
    expect(groupOf('Practitioner')).toHaveLength(0);
    const observation: string[] = groupOf('Observation')[0]['idx.ref'].$in;
    expect(observation).toEqual(expect.arrayContaining(['subject|Patient/p1', 'performer|Patient/p1']));
    // Observation has no `patient`-only list of its own: `author` is another type's parameter
    expect(observation).not.toContain('author|Patient/p1');
    // the outer $in is the union, so the reference index bounds the whole search
    expect(filter.$or[1]['idx.ref'].$in).toEqual(expect.arrayContaining(observation));
    expect(refused(() => allTypesCompartmentFilter('r4', 'Encounter', 'e1')).status).toBe(400);
  });
});
