import { validateResource } from './validate-resource';

function issuesOf(resource: unknown, expectedType?: string): string[] {
  return validateResource('dstu2', resource, expectedType).map((i) => `${i.code} ${i.path}`);
}

describe('validateResource (dstu2, JSON rules)', () => {
  it('accepts a well-formed resource with DSTU2-only types', () => {
    const order = {
      resourceType: 'MedicationOrder',
      id: 'm1',
      meta: { versionId: '2', lastUpdated: '2016-01-01T00:00:00Z' },
      patient: { reference: 'Patient/1' },
      medicationCodeableConcept: { text: 'aspirin' },
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
    expect(issuesOf({ resourceType: 'Patient', contained: [{ resourceType: 'Nope', id: 'c' }] })).toEqual([
      'not-found Patient.contained[0].resourceType',
    ]);
    const bundle = {
      resourceType: 'Bundle',
      type: 'collection',
      entry: [
        {
          fullUrl: 'urn:uuid:9d1c2a4e-1111-4c1e-8d5b-2a0b5c0f3e01',
          resource: { resourceType: 'Patient', id: '' },
        },
      ],
    };
    expect(issuesOf(bundle)).toEqual(['value Bundle.entry[0].resource.id']);
  });
});

describe('validateResource (dstu2, structure from the HL7 1.0.2 definitions)', () => {
  it('refuses an Observation without status and code and with an unknown element', () => {
    const observation = {
      resourceType: 'Observation',
      subject: { reference: 'Patient/1' },
      note: [{ text: 'not a DSTU2 element' }],
    };
    expect(issuesOf(observation).sort()).toEqual([
      'required Observation.code',
      'required Observation.status',
      'structure Observation.note',
    ]);
  });

  it('accepts DSTU2-only elements and refuses R4-only ones', () => {
    const observation = {
      resourceType: 'Observation',
      status: 'final',
      code: { text: 'x' },
      comments: 'DSTU2 has comments, not note',
      valueQuantity: { value: 1, unit: 'kg' },
    };
    expect(issuesOf(observation)).toEqual([]);
    expect(issuesOf({ ...observation, effectiveInstant: '2016-01-01T00:00:00Z' })).toEqual([
      'structure Observation.effectiveInstant',
    ]);
  });

  it('checks JSON types, cardinality, primitive formats and choices', () => {
    const base = { resourceType: 'Observation', status: 'final', code: { text: 'x' } };
    expect(issuesOf({ ...base, status: 3 })).toEqual(['structure Observation.status']);
    expect(issuesOf({ ...base, identifier: { value: 'x' } })).toEqual(['structure Observation.identifier']);
    expect(issuesOf({ ...base, category: [{ text: 'x' }] })).toEqual(['structure Observation.category']);
    expect(issuesOf({ ...base, issued: '2016-01-01' })).toEqual(['value Observation.issued']);
    expect(issuesOf({ ...base, valueString: 'a', valueTime: '10:00:00' })).toEqual([
      'structure Observation.value[x]',
    ]);
    // Observation.value[x] has no boolean in DSTU2 (https://hl7.org/fhir/DSTU2/observation.html)
    expect(issuesOf({ ...base, valueBoolean: true })).toEqual(['structure Observation.valueBoolean']);
    expect(issuesOf({ resourceType: 'Patient', birthDate: '2016-13-01' })).toEqual([
      'value Patient.birthDate',
    ]);
  });

  it('follows nameReference (Questionnaire.group.group) and constrained Quantity types', () => {
    const questionnaire = {
      resourceType: 'Questionnaire',
      status: 'published',
      group: { linkId: 'a', group: [{ linkId: 'b', question: [{ linkId: 'c', type: 'string' }] }] },
    };
    expect(issuesOf(questionnaire)).toEqual([]);
    expect(issuesOf({ ...questionnaire, group: { linkId: 'a', group: [{ bogus: 1 }] } })).toEqual([
      'structure Questionnaire.group.group[0].bogus',
    ]);
    const range = { low: { value: 1, comparator: '<' } };
    const observation = { resourceType: 'Observation', status: 'final', code: { text: 'x' } };
    expect(issuesOf({ ...observation, referenceRange: [range] })).toEqual([]);
  });

  it('checks required bindings against the 1.0.2 value sets: code, Coding and CodeableConcept', () => {
    expect(issuesOf({ resourceType: 'Patient', gender: 'nope' })).toEqual(['code-invalid Patient.gender']);
    expect(issuesOf({ resourceType: 'Patient', gender: 'female' })).toEqual([]);
    // DSTU2 codes, not R4's: `amended` is in both, `corrected` only from R4 on
    const observation = (status: string) => ({ resourceType: 'Observation', status, code: { text: 'x' } });
    expect(issuesOf(observation('amended'))).toEqual([]);
    expect(issuesOf(observation('corrected'))).toEqual(['code-invalid Observation.status']);
    const marital = (system: string, code: string) => ({
      resourceType: 'Patient',
      maritalStatus: { coding: [{ system, code }] },
    });
    expect(issuesOf(marital('http://hl7.org/fhir/v3/MaritalStatus', 'M'))).toEqual([]);
    expect(issuesOf(marital('http://hl7.org/fhir/v3/MaritalStatus', 'Q'))).toEqual([
      'code-invalid Patient.maritalStatus',
    ]);
    expect(issuesOf({ resourceType: 'Patient', telecom: [{ system: 'pigeon', value: 'x' }] })).toEqual([
      'code-invalid Patient.telecom[0].system',
    ]);
  });

  it('leaves alone the bindings whose value sets the definitions do not list in full', () => {
    // languages (BCP-47) and the SNOMED-based example sets are not enumerated: never refused here
    expect(issuesOf({ resourceType: 'Patient', language: 'anything-goes' })).toEqual([]);
  });

  it('checks uri as the DSTU2 reference does: no surrounding whitespace, no bare oid:/uuid:', () => {
    const system = (value: string) =>
      issuesOf({ resourceType: 'Patient', identifier: [{ system: value, value: 'x' }] });
    expect(system('http://example.org/ids')).toEqual([]);
    expect(system('Healthcare Provider')).toEqual([]);
    expect(system(' http://example.org')).toEqual(['value Patient.identifier[0].system']);
    expect(system('http://example.org ')).toEqual(['value Patient.identifier[0].system']);
    expect(system('oid:1.2.3')).toEqual(['value Patient.identifier[0].system']);
    expect(system('uuid:2f1a4b7e-9a3b-4c1e-8d2f-0a1b2c3d4e5f')).toEqual([
      'value Patient.identifier[0].system',
    ]);
    expect(system('urn:oid:1.2.3')).toEqual([]);
  });
});
