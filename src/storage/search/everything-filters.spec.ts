import {
  anyPatientCompartmentFilter,
  careDateCondition,
  outsideReferencePattern,
  outsideTargets,
} from './everything-filters';

describe('$everything filters', () => {
  it('type-level $everything: every Patient, and resources in some Patient compartment (their compartment entry)', () => {
    const filter = anyPatientCompartmentFilter() as any;
    expect(filter.$or[0]).toEqual({ t: 'Patient' });
    const pattern = new RegExp(filter.$or[1]['idx.ref'].$regex);
    expect(pattern.test('*patient|Patient/p1')).toBe(true);
    expect(pattern.test('*patient|Patient/p-1.2')).toBe(true);
    // the parameters' own entries are not what places a resource in a compartment
    expect(pattern.test('subject|Patient/p1')).toBe(false);
    expect(pattern.test('focus|Patient/p1')).toBe(false);
    // anchored at the start: a bounded range of the references index
    expect(filter.$or[1]['idx.ref'].$regex.startsWith('^')).toBe(true);
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

  it('builds the care-date conditions', () => {
    expect(careDateCondition(undefined, undefined)).toBeUndefined();
    const condition = careDateCondition(new Date('2020-01-01T00:00:00.000Z'), undefined) as {
      $or: Array<Record<string, any>>;
    };
    const pattern = new RegExp(condition.$or[1].$and[0]['idx.dth'].$regex);
    expect(pattern.test('date|2020-06-01T00:00:00.000Z')).toBe(true);
    expect(pattern.test('date|2019-12-31T23:59:59.999Z')).toBe(false);
  });
});
