import { validateResource } from './validate-resource';

function issuesOf(resource: unknown, expectedType?: string): string[] {
  return validateResource('dstu2', resource, expectedType).map((i) => `${i.code} ${i.path}`);
}

describe('validateResource (dstu2, light checks)', () => {
  it('accepts a well-formed resource with DSTU2-only types', () => {
    const order = {
      resourceType: 'MedicationOrder',
      id: 'm1',
      meta: { versionId: '2', lastUpdated: '2016-01-01T00:00:00Z' },
      patient: { reference: 'Patient/1' },
    };
    expect(issuesOf(order, 'MedicationOrder')).toEqual([]);
  });

  it('checks resourceType', () => {
    expect(issuesOf({ resourceType: 'MedicationRequest' })).toEqual(['not-found Resource.resourceType']);
    expect(issuesOf({ id: 'x' }, 'Patient')).toEqual(['required Patient.resourceType']);
    expect(issuesOf({ resourceType: 'Patient' }, 'Observation')).toEqual([
      'invalid Observation.resourceType',
    ]);
    expect(issuesOf('Patient')).toEqual(['structure Resource']);
  });

  it('checks id and meta formats', () => {
    expect(issuesOf({ resourceType: 'Patient', id: 'a b' })).toEqual(['value Patient.id']);
    expect(issuesOf({ resourceType: 'Patient', id: 'a'.repeat(65) })).toEqual(['too-long Patient.id']);
    expect(issuesOf({ resourceType: 'Patient', meta: { versionId: 'v 1' } })).toEqual([
      'value Patient.meta.versionId',
    ]);
    expect(issuesOf({ resourceType: 'Patient', meta: { lastUpdated: '2016-02-30T00:00:00Z' } })).toEqual([
      'value Patient.meta.lastUpdated',
    ]);
    expect(issuesOf({ resourceType: 'Patient', meta: { lastUpdated: '2016-01-01' } })).toEqual([
      'value Patient.meta.lastUpdated',
    ]);
  });

  it('rejects empty strings, arrays, objects and nulls', () => {
    expect(issuesOf({ resourceType: 'Patient', gender: '' })).toEqual(['value Patient.gender']);
    expect(issuesOf({ resourceType: 'Patient', name: [] })).toEqual(['structure Patient.name']);
    expect(issuesOf({ resourceType: 'Patient', name: [{}] })).toEqual(['structure Patient.name[0]']);
    expect(issuesOf({ resourceType: 'Patient', active: null })).toEqual(['structure Patient.active']);
    expect(issuesOf({ resourceType: 'Patient', name: [{ given: ['a', null] }] })).toEqual([
      'structure Patient.name[0].given[1]',
    ]);
    const aligned = {
      given: ['a', null],
      _given: [null, { extension: [{ url: 'http://x', valueCode: 'y' }] }],
    };
    expect(issuesOf({ resourceType: 'Patient', name: [aligned] })).toEqual([]);
  });

  it('checks contained resources and Bundle entries as resources', () => {
    expect(issuesOf({ resourceType: 'Patient', contained: [{ resourceType: 'Nope' }] })).toEqual([
      'not-found Patient.contained[0].resourceType',
    ]);
    const bundle = {
      resourceType: 'Bundle',
      type: 'collection',
      entry: [{ resource: { resourceType: 'Patient', id: '' } }],
    };
    expect(issuesOf(bundle)).toEqual(['value Bundle.entry[0].resource.id']);
  });
});
