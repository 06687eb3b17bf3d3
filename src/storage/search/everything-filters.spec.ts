import {
  anyPatientCompartmentFilter,
  careDateCondition,
  outsideReferencePattern,
  outsideTargets,
} from './everything-filters';
import { compartmentFilter } from './patient-compartment-filter';

const BASE = 'http://fhir.test';

describe('$everything filters', () => {
  it('type-level $everything: every Patient, and resources whose compartment parameters reference one', () => {
    const filter = anyPatientCompartmentFilter('r4') as any;
    expect(filter.$or[0]).toEqual({ t: 'Patient' });
    const pattern = new RegExp(filter.$or[1]['idx.ref'].$regex);
    expect(pattern.test('subject|Patient/p1')).toBe(true);
    expect(pattern.test('subject|Patient/p-1.2')).toBe(true);
    // this server's absolute references are stored relative: the absolute form is no compartment entry
    expect(pattern.test(`subject|${BASE}/r4/Patient/p-1.2`)).toBe(false);
    expect(pattern.test('subject|Group/g1')).toBe(false);
    expect(pattern.test('xsubject|Patient/p1')).toBe(false);
    expect(pattern.test('subject|Patient/p1/_history/2')).toBe(false);
    expect(filter.$or[1].t.$in).toContain('Observation');
    expect(filter.$or[1].t.$in).not.toContain('Practitioner');
  });
  it('$everything: the references that point outside the compartment, as stored (relative)', () => {
    const base = 'https://fhir.example.org/api';
    const outside = new RegExp(outsideReferencePattern('r4'));
    const entries = [
      'performer|Practitioner/p-1',
      'serviceProvider|Organization/o.1',
      'location|Location/l-1',
      'performer|Practitioner/p-1',
    ];
    for (const entry of entries) expect(outside.test(entry)).toBe(true);
    for (const entry of [
      'subject|Patient/x', // the compartment's own types stay out
      'encounter|Encounter/e-1',
      'performer|http://elsewhere.org/fhir/Practitioner/p-2', // another server's resource
      `performer|${base}/stu3/Practitioner/p-3`, // another version's store (stays absolute)
      'performer|Practitioner/p-1/_history/2',
      'performer|Practitioner/',
    ])
      expect(outside.test(entry)).toBe(false);
    expect(outsideTargets(entries)).toEqual([
      { type: 'Practitioner', id: 'p-1' },
      { type: 'Organization', id: 'o.1' },
      { type: 'Location', id: 'l-1' },
    ]);
  });

  it('builds the compartment and care-date conditions', () => {
    const filter = compartmentFilter('r4', 'p1') as {
      $expr: { $in: [string, string[]] };
      'idx.ref': { $in: string[] };
    };
    // the types are tested on the candidates, never an index bound (see compartmentFilter)
    expect(filter).not.toHaveProperty('t');
    expect(filter.$expr.$in[0]).toBe('$t');
    expect(filter.$expr.$in[1]).toContain('Observation');
    expect(filter.$expr.$in[1]).not.toContain('Practitioner');
    expect(filter['idx.ref'].$in).toContain('subject|Patient/p1');
    // one entry per compartment parameter: the relative form, the one the store holds
    expect(filter['idx.ref'].$in.every((entry) => entry.endsWith('|Patient/p1'))).toBe(true);
    expect(new Set(filter['idx.ref'].$in).size).toBe(filter['idx.ref'].$in.length);
    expect(careDateCondition(undefined, undefined)).toBeUndefined();
    const condition = careDateCondition(new Date('2020-01-01T00:00:00.000Z'), undefined) as {
      $or: Array<Record<string, any>>;
    };
    const pattern = new RegExp(condition.$or[1].$and[0]['idx.dth'].$regex);
    expect(pattern.test('date|2020-06-01T00:00:00.000Z')).toBe(true);
    expect(pattern.test('date|2019-12-31T23:59:59.999Z')).toBe(false);
  });
});
