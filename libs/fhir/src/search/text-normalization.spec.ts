import { escapeComponent, escapeRegex, normalizeText, sortableNumber, textWords } from './text-normalization';

describe('text normalization', () => {
  it('lower-cases, strips accents and collapses whitespace', () => {
    expect(normalizeText('  Ångström   Ñandú\tÉCOLE ')).toBe('angstrom nandu ecole');
  });

  it('escapes every regex metacharacter', () => {
    const hostile = '.*+?^${}()|[]\\';
    expect(new RegExp(`^${escapeRegex(hostile)}$`).test(hostile)).toBe(true);
    expect(new RegExp(escapeRegex('.*')).test('abc')).toBe(false);
  });

  it('escapes component separators', () => {
    expect(escapeComponent('a|b\\c')).toBe('a\\|b\\\\c');
  });

  it('splits words of two or more letters/digits', () => {
    expect(textWords('Body-Height: 8302-2 x Élevé')).toEqual(['body', 'height', '8302', 'eleve']);
  });

  it('encodes numbers so that string order is numeric order', () => {
    const values = [-1e300, -12.5, -1, -0.001, 0, 0.001, 0.25, 1, 2, 10, 99.5, 100, 1e300];
    const encoded = values.map(sortableNumber);
    expect([...encoded].sort()).toEqual(encoded);
    expect(sortableNumber(-0)).toBe(sortableNumber(0));
    expect(encoded.every((entry) => /^[0-9a-f]{16}$/.test(entry))).toBe(true);
  });
});
