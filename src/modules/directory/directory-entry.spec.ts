import {
  entryWords,
  escapeRegex,
  foldedWords,
  parseQueryWords,
  searchPrefixes,
  sortName,
  validateEntry,
} from './directory-entry';

describe('directory entry text', () => {
  it('folds case and accents, joins apostrophes, splits on punctuation', () => {
    expect(foldedWords("Hôpital St. Mary's (Boston)-North")).toEqual([
      'hopital',
      'st',
      'marys',
      'boston',
      'north',
    ]);
    expect(sortName('  Ádam   Health ')).toBe('adam health');
  });

  it('stores every prefix up to 15 characters, once', () => {
    const prefixes = searchPrefixes(['abc', 'abd', 'x'.repeat(20)]);
    expect(prefixes).toEqual(expect.arrayContaining(['a', 'ab', 'abc', 'abd', 'x'.repeat(15)]));
    expect(prefixes).not.toContain('x'.repeat(16));
    expect(new Set(prefixes).size).toBe(prefixes.length);
  });

  it('takes words from name, address lines and city only', () => {
    const words = entryWords({
      name: 'Baystate Medical',
      address: { line: ['759 Chestnut St'], city: 'Springfield', state: 'MA', postalCode: '01199' },
    });
    expect(words).toEqual(['baystate', 'medical', '759', 'chestnut', 'st', 'springfield']);
  });

  it('parses query words longest first, drops words that prefix another, flags punctuation-only queries', () => {
    expect(parseQueryWords('st  Stanley')).toEqual({ matchesNothing: false, words: ['stanley'] });
    expect(parseQueryWords('Boston General')).toEqual({
      matchesNothing: false,
      words: ['general', 'boston'],
    });
    expect(parseQueryWords('.*')).toEqual({ matchesNothing: true, words: [] });
    expect(parseQueryWords('  ')).toEqual({ matchesNothing: false, words: [] });
    expect(parseQueryWords('{"$ne": null}').words).toEqual(['null', 'ne']);
  });

  it('escapes regex metacharacters', () => {
    const literal = 'a.b*c(d)[e]^$|?+\\/-';
    expect(new RegExp(`^${escapeRegex(literal)}$`).test(literal)).toBe(true);
  });
});

describe('validateEntry', () => {
  const good = { id: 'h-1', name: 'General Hospital', system_type: 'HealthSystem' };

  it('accepts a minimal record and fills defaults', () => {
    const result = validateEntry(good);
    expect(result).toEqual({
      ok: true,
      entry: {
        ...good,
        address: { line: [], city: null, state: null, postalCode: null },
        ehr: null,
        fhir_base_url: null,
        logo: null,
        status: 'active',
      },
    });
  });

  it.each([
    [{ ...good, id: 'bad id' }, /id is required/],
    [{ ...good, name: '' }, /name is required/],
    [{ ...good, system_type: 'Hospital' }, /system_type must be one of/],
    [{ ...good, status: 'gone' }, /status must be active or inactive/],
    [{ ...good, fhir_base_url: 'javascript:alert(1)' }, /fhir_base_url must be an absolute http/],
    [{ ...good, address: { line: 'one line' } }, /address.line must be an array/],
    [{ ...good, address: { town: 'x' } }, /unknown field address.town/],
    [{ ...good, systemtype: 'x' }, /unknown field systemtype/],
    [{ ...good, name: { $ne: null } }, /name must be a string/],
    [[good], /must be a JSON object/],
  ])('rejects %j', (record, reason) => {
    const result = validateEntry(record);
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.reason).toMatch(reason);
  });
});
