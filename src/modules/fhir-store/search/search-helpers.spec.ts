import { parseSearch } from '@app/fhir';
import {
  careDateCondition,
  compartmentFilter,
  outsideReferencePattern,
  outsideTargets,
  parseEverythingParams,
} from './patient-compartment';
import { formPairs, isStrictHandling, linkPairs, normalizeReferenceValues } from './search-request';
import { searchLinks, shapedResourceJson } from './searchset-bundle';

describe('search helpers', () => {
  it('paging links keep the parameters, and omit next/last when unknown', () => {
    const links = searchLinks('http://x/r4/Patient', [['name', 'a b']], {
      skip: 10,
      count: 10,
      total: 25,
      hasNext: true,
    });
    expect(links.map((l) => l.relation)).toEqual(['self', 'first', 'previous', 'next', 'last']);
    expect(links[0].url).toBe('http://x/r4/Patient?name=a+b&_count=10&_skip=10');
    expect(links[4].url).toContain('_skip=20');
    const open = searchLinks('http://x/r4/Patient', [], { skip: 0, count: 5, hasNext: false });
    expect(open.map((l) => l.relation)).toEqual(['self', 'first']);
    expect(
      linkPairs([
        ['_count', '1'],
        ['_skip', '2'],
        ['_offset', '3'],
        ['a', 'b'],
      ]),
    ).toEqual([['a', 'b']]);
  });

  it('$everything: the references that point outside the compartment, relative or with this base', () => {
    const base = 'https://fhir.example.org/api';
    const outside = new RegExp(outsideReferencePattern('r4', base));
    const entries = [
      'performer|Practitioner/p-1',
      `serviceProvider|${base}/r4/Organization/o.1`,
      'location|Location/l-1',
      'performer|Practitioner/p-1',
    ];
    for (const entry of entries) expect(outside.test(entry)).toBe(true);
    for (const entry of [
      'subject|Patient/x', // the compartment's own types stay out
      'encounter|Encounter/e-1',
      'performer|http://elsewhere.org/fhir/Practitioner/p-2', // another server's resource
      `performer|${base}/stu3/Practitioner/p-3`, // another version's store
      'performer|Practitioner/p-1/_history/2',
      'performer|Practitioner/',
    ])
      expect(outside.test(entry)).toBe(false);
    expect(outsideTargets(entries, base, 'r4')).toEqual([
      { type: 'Practitioner', id: 'p-1' },
      { type: 'Organization', id: 'o.1' },
      { type: 'Location', id: 'l-1' },
    ]);
  });

  it('_elements and _summary subsets keep id/meta and tag SUBSETTED', () => {
    const json = JSON.stringify({
      resourceType: 'Patient',
      id: '1',
      meta: { versionId: '1' },
      text: { div: 'x' },
      gender: 'male',
      name: [],
    });
    const subset = JSON.parse(shapedResourceJson('r4', json, { elements: ['gender', 'Observation.name'] }));
    expect(Object.keys(subset).sort()).toEqual(['gender', 'id', 'meta', 'resourceType']);
    expect(subset.meta.tag[0].code).toBe('SUBSETTED');
    expect(JSON.parse(shapedResourceJson('r4', json, { summary: 'data' })).text).toBeUndefined();
    expect(Object.keys(JSON.parse(shapedResourceJson('r4', json, { summary: 'text' }))).sort()).toEqual([
      'id',
      'meta',
      'resourceType',
      'text',
    ]);
    expect(shapedResourceJson('r4', json, {})).toBe(json);
  });

  it('reads Prefer handling and refuses non-text form values', () => {
    expect(isStrictHandling('handling=strict')).toBe(true);
    expect(isStrictHandling('return=minimal, handling=strict')).toBe(true);
    expect(isStrictHandling('handling=lenient')).toBe(false);
    expect(isStrictHandling(undefined)).toBe(false);
    expect(formPairs({ a: ['1', '2'], b: '3' })).toEqual([
      ['a', '1'],
      ['a', '2'],
      ['b', '3'],
    ]);
    expect(() => formPairs({ a: { $gt: '' } })).toThrow('text value');
  });

  it('makes references to this server relative and matches both forms', () => {
    const parsed = parseSearch('r4', 'Observation', [['subject', 'http://me/r4/Patient/1']]);
    normalizeReferenceValues(parsed, 'http://me');
    expect(parsed.clauses[0].values).toEqual([
      { kind: 'reference', reference: 'Patient/1' },
      { kind: 'reference', reference: 'http://me/r4/Patient/1' },
    ]);
  });

  it('parses $everything parameters and rejects bad ones', () => {
    const limits = { defaultCount: 10, maxCount: 100, maxSkip: 1000 };
    const window = parseEverythingParams(
      'r4',
      [
        ['_count', '500'],
        ['_type', 'Observation,Condition'],
        ['start', '2020'],
        ['end', '2020'],
        ['x', 'y'],
      ],
      limits,
    );
    expect(window).toMatchObject({ count: 100, types: ['Observation', 'Condition'], unknown: ['x'] });
    expect(window.start?.toISOString()).toBe('2020-01-01T00:00:00.000Z');
    expect(window.end?.toISOString()).toBe('2020-12-31T23:59:59.999Z');
    expect(() => parseEverythingParams('r4', [['_skip', '5000']], limits)).toThrow('at most');
    expect(() => parseEverythingParams('r4', [['_type', 'Nope']], limits)).toThrow('unknown resource type');
    expect(() => parseEverythingParams('r4', [['_since', 'yesterday']], limits)).toThrow('FHIR date');
  });

  it('builds the compartment and care-date conditions', () => {
    const filter = compartmentFilter('r4', 'p1', 'http://me') as {
      $expr: { $in: [string, string[]] };
      'idx.ref': { $in: string[] };
    };
    // the types are tested on the candidates, never an index bound (see compartmentFilter)
    expect(filter).not.toHaveProperty('t');
    expect(filter.$expr.$in[0]).toBe('$t');
    expect(filter.$expr.$in[1]).toContain('Observation');
    expect(filter.$expr.$in[1]).not.toContain('Practitioner');
    expect(filter['idx.ref'].$in).toContain('subject|Patient/p1');
    expect(filter['idx.ref'].$in).toContain('subject|http://me/r4/Patient/p1');
    expect(careDateCondition(undefined, undefined)).toBeUndefined();
    const condition = careDateCondition(new Date('2020-01-01T00:00:00.000Z'), undefined) as {
      $or: Array<Record<string, any>>;
    };
    const pattern = new RegExp(condition.$or[1].$and[0]['idx.dth'].$regex);
    expect(pattern.test('date|2020-06-01T00:00:00.000Z')).toBe(true);
    expect(pattern.test('date|2019-12-31T23:59:59.999Z')).toBe(false);
  });
});
