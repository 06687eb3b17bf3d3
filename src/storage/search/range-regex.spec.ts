import fc from 'fast-check';
import { rangePattern, type RangeBound } from './range-regex';
import { sortableNumber } from '@app/fhir/search/text-normalization';

function matches(pattern: string, text: string): boolean {
  return new RegExp(pattern).test(text);
}

function inRange(value: string, lower?: RangeBound, upper?: RangeBound): boolean {
  if (lower && (lower.inclusive ? value < lower.value : value <= lower.value)) return false;
  if (upper && (upper.inclusive ? value > upper.value : value >= upper.value)) return false;
  return true;
}

const hexString = fc
  .array(fc.constantFrom(...'0123456789abcdef'), { minLength: 6, maxLength: 6 })
  .map((chars) => chars.join(''));
const bound = (value: fc.Arbitrary<string>) =>
  fc.option(fc.record({ value, inclusive: fc.boolean() }), { nil: undefined });

describe('rangePattern', () => {
  it('matches exactly the fixed-width hex strings within the bounds (property)', () => {
    fc.assert(
      fc.property(hexString, bound(hexString), bound(hexString), (value, lower, upper) => {
        const pattern = rangePattern('p\\|', lower, upper, 6, 'hex');
        expect(matches(pattern, `p|${value}`)).toBe(inRange(value, lower, upper));
      }),
      { numRuns: 3000 },
    );
  });

  it('keeps the value of one key prefix apart from another', () => {
    const pattern = rangePattern(
      'date\\|',
      { value: '2000-01-01T00:00:00.000Z', inclusive: true },
      undefined,
      24,
      'digits',
    );
    expect(matches(pattern, 'date|2010-05-01T00:00:00.000Z')).toBe(true);
    expect(matches(pattern, 'date|1999-12-31T23:59:59.999Z')).toBe(false);
    expect(matches(pattern, 'birthdate|2010-05-01T00:00:00.000Z')).toBe(false);
    expect(matches(pattern, 'date|2010-05-01T00:00:00.000Zx')).toBe(false);
  });

  it('orders ISO instants across every digit position (property)', () => {
    const instant = fc
      .integer({ min: Date.UTC(1, 0, 1) - 59_000_000_000_000, max: Date.UTC(9999, 11, 31) })
      .map((time) => new Date(time).toISOString())
      .filter((text) => text.length === 24);
    fc.assert(
      fc.property(instant, bound(instant), bound(instant), (value, lower, upper) => {
        expect(matches(rangePattern('d\\|', lower, upper, 24, 'digits'), `d|${value}`)).toBe(
          inRange(value, lower, upper),
        );
      }),
      { numRuns: 2000 },
    );
  });

  it('works on sortableNumber encodings for numeric ranges', () => {
    const pattern = rangePattern(
      'v\\|',
      { value: sortableNumber(99.5), inclusive: true },
      { value: sortableNumber(100.5), inclusive: false },
      16,
      'hex',
    );
    for (const [value, expected] of [
      [100, true],
      [99.5, true],
      [100.5, false],
      [-100, false],
      [1000, false],
    ] as const) {
      expect(matches(pattern, `v|${sortableNumber(value)}`)).toBe(expected);
    }
  });

  it('an empty range never matches', () => {
    const pattern = rangePattern(
      'p\\|',
      { value: 'b', inclusive: false },
      { value: 'a', inclusive: true },
      1,
      'hex',
    );
    expect(matches(pattern, 'p|a')).toBe(false);
    expect(matches(pattern, 'p|b')).toBe(false);
  });
});
