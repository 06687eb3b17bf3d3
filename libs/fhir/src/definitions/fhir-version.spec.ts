import { parseFhirVersion } from './fhir-version';
import { isResourceType, resourceTypes } from './resource-types';

describe('parseFhirVersion', () => {
  it.each([
    ['R4', 'r4'],
    ['r4', 'r4'],
    ['STU3', 'stu3'],
    ['Stu3', 'stu3'],
    ['DSTU2', 'dstu2'],
    ['dstu2', 'dstu2'],
  ])('%s → %s', (segment, version) => {
    expect(parseFhirVersion(segment)).toBe(version);
  });
  it.each(['r5', 'R', '', 'fhir', 'r4 ', 'DSTU3'])('rejects %j', (segment) => {
    expect(parseFhirVersion(segment)).toBeUndefined();
  });
});

describe('resourceTypes / isResourceType', () => {
  it('lists the concrete resource types of each version, sorted', () => {
    const counts = { r4: 146, stu3: 117, dstu2: 94 } as const;
    for (const version of ['r4', 'stu3', 'dstu2'] as const) {
      const types = resourceTypes(version);
      expect(types).toHaveLength(counts[version]);
      expect([...types].sort()).toEqual(types);
      expect(types).toContain('Patient');
      expect(types).not.toContain('DomainResource');
      expect(types).not.toContain('Resource');
    }
  });

  it('knows which types belong to which version', () => {
    expect(isResourceType('r4', 'MedicationRequest')).toBe(true);
    expect(isResourceType('stu3', 'MedicationRequest')).toBe(true);
    expect(isResourceType('dstu2', 'MedicationRequest')).toBe(false);
    expect(isResourceType('dstu2', 'MedicationOrder')).toBe(true);
    expect(isResourceType('r4', 'MedicationOrder')).toBe(false);
    expect(isResourceType('stu3', 'BodySite')).toBe(true);
    expect(isResourceType('r4', 'BodySite')).toBe(false);
    expect(isResourceType('r4', 'HumanName')).toBe(false);
    expect(isResourceType('r4', 'patient')).toBe(false);
  });
});
