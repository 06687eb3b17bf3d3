import { isStrictHandling } from './prefer';
import { formPairs } from './search-pairs';

describe('FHIR request parsing', () => {
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
});
