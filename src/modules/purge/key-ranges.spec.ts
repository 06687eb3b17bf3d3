import { SLICES, sliceRange } from './key-ranges';

const prefix = 'r4|c1|Observation|';
const inRange = (key: string, r: { from: string; to: string }) => key >= r.from && key < r.to;

describe('sliceRange', () => {
  it('covers the whole key space of the type, and nothing of the neighbouring types', () => {
    const all = sliceRange(prefix, 0, SLICES);
    for (const id of ['-', '.', '0', 'A-1', 'zzzz', 'a.b', '~odd'])
      expect(inRange(prefix + id, all)).toBe(true);
    expect(inRange('r4|c1|ObservationDefinition|x', all)).toBe(false);
    expect(inRange('r4|c1|Observation', all)).toBe(false);
    expect(inRange('r4|c1|Organization|x', all)).toBe(false);
    expect(inRange('r4|c1|Obs|x', all)).toBe(false);
  });

  it('puts every id in exactly one slice, the slices in key order', () => {
    const ids = ['-x', '.x', '0', '9z', 'A', 'Zed', 'a', 'f3a', 'z-9', '~'];
    for (const id of ids) {
      const slices = [...Array(SLICES).keys()].filter((i) => inRange(prefix + id, sliceRange(prefix, i, 1)));
      expect(slices).toHaveLength(1);
    }
    for (let i = 0; i + 1 < SLICES; i++) {
      expect(sliceRange(prefix, i, 1).to).toBe(sliceRange(prefix, i + 1, 1).from);
    }
  });

  it('joins consecutive slices and stops at the end of the type', () => {
    expect(sliceRange(prefix, 2, 3)).toEqual({
      from: sliceRange(prefix, 2, 1).from,
      to: sliceRange(prefix, 4, 1).to,
    });
    expect(sliceRange(prefix, SLICES - 2, 10).to).toBe('r4|c1|Observation}');
  });
});
