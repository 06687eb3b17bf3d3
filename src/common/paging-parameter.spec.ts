import { OperationOutcomeError } from '@app/fhir';
import { pagingParameter, type PagingRule } from './paging-parameter';

describe('pagingParameter', () => {
  const position: PagingRule = { fallback: 0, max: 100, overMax: 'refuse' };
  const size: PagingRule = { fallback: 10, min: 1, max: 50, overMax: 'clamp' };
  const message = (raw: unknown, rule = position) => {
    try {
      pagingParameter('offset', raw, rule);
      return 'accepted';
    } catch (e) {
      return (e as OperationOutcomeError).outcome.issue[0].diagnostics;
    }
  };

  it('reads digits, numbers from JSON, and the fallback when absent', () => {
    expect(pagingParameter('offset', undefined, position)).toBe(0);
    expect(pagingParameter('offset', '', position)).toBe(0);
    expect(pagingParameter('offset', '42', position)).toBe(42);
    expect(pagingParameter('offset', 7, position)).toBe(7);
    expect(pagingParameter('limit', undefined, size)).toBe(10);
  });

  it('refuses signs, spaces, fractions, exponents, hex, repeats and other types the same way everywhere', () => {
    for (const raw of ['-1', ' 1', '1 ', '1.5', '1e3', '0x10', '+1', 'abc', -5, 1.5, true, ['1', '2']]) {
      expect({ raw, message: message(raw) }).toEqual({
        raw,
        message: expect.stringMatching(/^offset (must be a non-negative integer|may be given once)/),
      });
    }
    expect(message('0', size)).toMatch(/must be an integer from 1 to 50/);
  });

  it('over the maximum: a position is refused as too costly, a page size is clamped', () => {
    expect(message('101')).toBe('offset must be at most 100');
    expect(pagingParameter('limit', '500', size)).toBe(50);
  });
});
