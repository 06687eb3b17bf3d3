import { grantableScopes, scopeInWords } from './launch-scopes';

describe('launch scopes', () => {
  it('grants context scopes and patient/user resource scopes in the enforcing grammar, once each', () => {
    expect(
      grantableScopes(
        'openid fhirUser launch/patient patient/*.rs patient/*.rs user/Observation.read system/*.read launch bogus',
      ),
    ).toEqual(['openid', 'fhirUser', 'launch/patient', 'patient/*.rs', 'user/Observation.read']);
  });

  it('drops what the FHIR routes would not read as asked: v1 names with a query, letters out of order', () => {
    expect(grantableScopes('patient/Observation.read?category=laboratory patient/Observation.sr')).toEqual(
      [],
    );
    expect(grantableScopes('patient/Observation.rs?category=laboratory')).toEqual([
      'patient/Observation.rs?category=laboratory',
    ]);
  });

  it('says each scope in plain words', () => {
    expect(scopeInWords('patient/*.rs')).toBe('Read and search your health records');
    expect(scopeInWords('patient/Observation.cruds')).toBe(
      'Create, read, change, delete and search your Observation records',
    );
    expect(scopeInWords('user/Observation.write')).toBe('Create, change and delete the Observation records');
    expect(
      scopeInWords(
        'patient/Observation.rs?category=http://terminology.hl7.org/CodeSystem/observation-category|laboratory',
      ),
    ).toBe(
      'Read and search your Observation records (only those matching category http://terminology.hl7.org/CodeSystem/observation-category|laboratory)',
    );
    expect(scopeInWords('offline_access')).toMatch(/until you revoke it/);
  });
});
