import { derivedParams, storedForm } from './stored-params';
import { searchDefinitions } from './search-parameter-registry';

describe('storedForm: parameters whose values are another parameter entries', () => {
  it('R4 Observation: patient is the subject references to a Patient; combo-* are unions', () => {
    expect(storedForm('r4', 'Observation', 'patient')).toEqual({
      kind: 'restriction',
      param: 'subject',
      targetTypes: ['Patient'],
    });
    expect(storedForm('r4', 'Observation', 'combo-code')).toEqual({
      kind: 'union',
      params: ['code', 'component-code'],
    });
    expect(storedForm('r4', 'Observation', 'combo-value-quantity')).toEqual({
      kind: 'union',
      params: ['component-value-quantity', 'value-quantity'],
    });
    for (const own of ['subject', 'code', 'component-code', 'value-quantity', 'date', 'encounter'])
      expect(storedForm('r4', 'Observation', own)).toEqual({ kind: 'own' });
  });

  it('a copy keeps the entries under the first code; Encounter.practitioner restricts participant', () => {
    expect(storedForm('r4', 'Patient', 'phonetic')).toEqual({ kind: 'union', params: ['name'] });
    expect(storedForm('r4', 'Patient', 'name')).toEqual({ kind: 'own' });
    expect(storedForm('r4', 'Encounter', 'practitioner')).toEqual({
      kind: 'restriction',
      param: 'participant',
      targetTypes: ['Practitioner'],
    });
  });

  it('STU3: patient (targets Patient, Group) restricts subject (four targets) by its targets', () => {
    expect(storedForm('stu3', 'Observation', 'patient')).toEqual({
      kind: 'restriction',
      param: 'subject',
      targetTypes: ['Patient', 'Group'],
    });
    expect(storedForm('stu3', 'Observation', 'subject')).toEqual({ kind: 'own' });
  });

  it('never derives from a derived parameter, across every type of every version', () => {
    for (const version of ['r4', 'stu3', 'dstu2'] as const) {
      for (const type of searchDefinitions(version).byType.keys()) {
        const derived = derivedParams(version, type);
        for (const code of derived) {
          const form = storedForm(version, type, code);
          const bases = form.kind === 'union' ? form.params : form.kind === 'restriction' ? [form.param] : [];
          expect(bases.length).toBeGreaterThan(0);
          for (const base of bases) {
            expect([version, type, code, base, derived.has(base)]).toEqual([
              version,
              type,
              code,
              base,
              false,
            ]);
          }
        }
      }
    }
  });

  it('unknown codes, unknown types and common parameters keep their own entries', () => {
    expect(storedForm('r4', 'Observation', 'no-such-param')).toEqual({ kind: 'own' });
    expect(storedForm('r4', 'NoSuchType', 'patient')).toEqual({ kind: 'own' });
    expect(storedForm('r4', 'Observation', '_tag')).toEqual({ kind: 'own' });
    expect(storedForm('r4', 'AllergyIntolerance', 'patient')).toEqual({ kind: 'own' });
  });
});
