import { OperationOutcomeError } from '@app/fhir';
import {
  accessOf,
  allowsEverything,
  assertAllowed,
  grantsNoWrite,
  parseResourceScope,
  permissionOf,
  rulesFor,
} from './smart-scopes';

const launch = (patient?: string) => ({ app: 'app', grant: 'g', ...(patient ? { patient } : {}) });
const perms = (scope: string) => [...(parseResourceScope(scope)?.permissions ?? [])].sort().join('');

describe('SMART scope grammar', () => {
  it('reads v1 scopes: read = r+s, write = c+u+d, * = cruds', () => {
    expect(perms('patient/*.read')).toBe('rs');
    expect(perms('patient/Observation.read')).toBe('rs');
    expect(perms('user/Observation.write')).toBe('cdu');
    expect(perms('user/*.*')).toBe('cdrsu');
    expect(parseResourceScope('patient/Observation.read')).toMatchObject({
      context: 'patient',
      type: 'Observation',
      conditions: [],
    });
  });

  it('reads v2 scopes with their letters in order only', () => {
    expect(perms('patient/*.rs')).toBe('rs');
    expect(perms('patient/Observation.cruds')).toBe('cdrsu');
    expect(perms('system/Patient.r')).toBe('r');
    expect(perms('user/Encounter.cud')).toBe('cdu');
    for (const bad of ['patient/*.sr', 'patient/*.rr', 'patient/*.x', 'patient/*.', 'user/*.readwrite'])
      expect(parseResourceScope(bad)).toBeNull();
  });

  it('reads v2 search-parameter scopes (token values, several values, several parameters)', () => {
    const scope = parseResourceScope(
      'patient/Observation.rs?category=http://terminology.hl7.org/CodeSystem/observation-category|laboratory',
    );
    expect(scope?.conditions).toEqual([
      {
        param: 'category',
        values: ['http://terminology.hl7.org/CodeSystem/observation-category|laboratory'],
      },
    ]);
    expect(parseResourceScope('user/Observation.rs?category=a|x,b|y&code=c|z')?.conditions).toEqual([
      { param: 'category', values: ['a|x', 'b|y'] },
      { param: 'code', values: ['c|z'] },
    ]);
  });

  it('grants nothing for a malformed or unsupported restriction, or a query on v1 names', () => {
    for (const bad of [
      'patient/Observation.rs?',
      'patient/Observation.rs?category=',
      'patient/Observation.rs?category=http://sys|',
      'patient/Observation.rs?Category=x',
      'patient/Observation.read?category=x',
    ])
      expect(parseResourceScope(bad)).toBeNull();
  });

  it('is not fooled by other scopes or look-alikes', () => {
    for (const other of [
      'openid',
      'fhirUser',
      'launch/patient',
      'offline_access',
      'bulk-data',
      'patient/*.rs ',
      'practitioner/*.rs',
      'patient/Obs3rvation.rs',
      'patient/*/x.rs',
    ])
      expect(parseResourceScope(other)).toBeNull();
  });
});

describe('access of a context', () => {
  it('keeps the credentials that predate SMART launches as they were', () => {
    expect(allowsEverything(accessOf({ scopes: ['user/*.*'] }), 'c')).toBe(true);
    expect(allowsEverything(accessOf({ scopes: ['system/*.*'] }), 'd')).toBe(true);
    for (const readOnly of [['user/*.rs'], ['user/*.read'], ['system/*.rs'], ['bulk-data'], ['openid'], []]) {
      const ctx = { scopes: readOnly };
      expect(allowsEverything(accessOf(ctx), 'r')).toBe(true);
      expect(allowsEverything(accessOf(ctx), 's')).toBe(true);
      expect(grantsNoWrite(ctx)).toBe(true);
    }
  });

  it('limits patient scopes to the launch patient, and gives them nothing without one', () => {
    const scopes = ['launch/patient', 'patient/*.rs'];
    expect(rulesFor(accessOf({ scopes, launch: launch('p1') }), 'r', 'Observation')).toEqual([
      { type: '*', patient: 'p1', conditions: [] },
    ]);
    expect(accessOf({ scopes, launch: launch() }).r).toEqual([]);
    // a launch token without any resource scope reads nothing (no pre-SMART fallback)
    expect(accessOf({ scopes: ['openid'], launch: launch('p1') }).r).toEqual([]);
  });

  it('tells apart what a launch of the same scopes allows per patient (memoized per patient)', () => {
    const scopes = ['patient/Observation.rs'];
    expect(accessOf({ scopes, launch: launch('a') }).r[0].patient).toBe('a');
    expect(accessOf({ scopes, launch: launch('b') }).r[0].patient).toBe('b');
    // patient scopes outside a launch (no patient context) grant nothing
    expect(accessOf({ scopes }).r).toEqual([]);
  });

  it('grants writes per type: user/Observation.write writes only Observations', () => {
    const ctx = { scopes: ['user/Observation.write', 'user/*.rs'], launch: launch('p') };
    expect(grantsNoWrite(ctx)).toBe(false);
    expect(() => assertAllowed(ctx, 'c', 'Observation')).not.toThrow();
    expect(() => assertAllowed(ctx, 'c', 'Condition')).toThrow(OperationOutcomeError);
    expect(() => assertAllowed(ctx, 'r', 'Condition')).not.toThrow();
  });

  it('refuses with 403 forbidden and insufficient_scope', () => {
    const ctx = { scopes: ['patient/*.rs'], launch: launch('p') };
    let error: unknown;
    try {
      assertAllowed(ctx, 'u', 'Observation');
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(OperationOutcomeError);
    expect((error as OperationOutcomeError).status).toBe(403);
    expect((error as OperationOutcomeError).headers).toEqual({
      'WWW-Authenticate': 'Bearer error="insufficient_scope"',
    });
  });

  it('allows whole-record removal only to a scope over every resource of every type', () => {
    expect(() => assertAllowed({ scopes: ['user/*.*'] }, 'd', undefined, true)).not.toThrow();
    expect(() =>
      assertAllowed({ scopes: ['patient/*.cruds'], launch: launch('p') }, 'd', undefined, true),
    ).toThrow();
    expect(() => assertAllowed({ scopes: ['user/Observation.d'] }, 'd', undefined, true)).toThrow();
  });

  it('reads the permission of an interaction from its method', () => {
    expect(permissionOf('GET', true)).toBe('r');
    expect(permissionOf('HEAD', false)).toBe('s');
    expect(permissionOf('POST', false)).toBe('c');
    expect(permissionOf('PUT', true)).toBe('u');
    expect(permissionOf('PATCH', true)).toBe('u');
    expect(permissionOf('DELETE', true)).toBe('d');
  });
});
