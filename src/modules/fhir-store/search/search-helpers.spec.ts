import { parseSearch } from '@app/fhir';
import { parseEverythingParams } from './patient-compartment';
import { linkPairs, normalizeReferenceValues } from './search-request';
import { searchLinks } from './searchset-bundle';

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

  it('makes references to this server relative, the one form the store holds them in', () => {
    const parsed = parseSearch('r4', 'Observation', [
      [
        'subject',
        'http://me/r4/Patient/1,Patient/2,http://other/r4/Patient/3,http://me/r4/Patient/4/_history/1',
      ],
    ]);
    normalizeReferenceValues(parsed, 'http://me');
    expect(parsed.clauses[0].values).toEqual([
      { kind: 'reference', reference: 'Patient/1' },
      { kind: 'reference', reference: 'Patient/2' },
      { kind: 'reference', reference: 'http://other/r4/Patient/3' },
      { kind: 'reference', reference: 'http://me/r4/Patient/4/_history/1' },
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
});
