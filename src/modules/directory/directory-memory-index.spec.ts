import { DirectoryEntryInput, entryWords, SYSTEM_TYPES, sortName } from './directory-entry';
import { DirectoryMemoryIndex, IndexedEntry } from './directory-memory-index';

const NAMES = [
  'Saint',
  'Mary',
  'Mercy',
  'Marys',
  'Valley',
  'Val',
  'Élise',
  'Ólafur',
  'Clinic',
  'Health',
  '𝔸stral',
  'ﬀ',
];

/** A deterministic pseudo-random generator, so that a failure is reproducible. */
function lcg(seed: number): () => number {
  let x = seed;
  return () => {
    x = (x * 1103515245 + 12345) % 2147483648;
    return x / 2147483648;
  };
}

function indexed(input: DirectoryEntryInput): IndexedEntry {
  return {
    entry: { ...input, created_at: '', updated_at: '' },
    words: entryWords(input),
    sortName: sortName(input.name),
  };
}

function generate(n: number, random: () => number): IndexedEntry[] {
  const pick = <T>(xs: readonly T[]) => xs[Math.floor(random() * xs.length)];
  return Array.from({ length: n }, (_v, i) =>
    indexed({
      id: `e${Math.floor(random() * 1e6)}-${i}`,
      name: `${pick(NAMES)} ${pick(NAMES)} ${random() < 0.5 ? pick(NAMES) : ''}`.trim(),
      system_type: pick(SYSTEM_TYPES),
      address: { line: [`${i} ${pick(NAMES)} St`], city: pick(NAMES), state: null, postalCode: null },
      ehr: null,
      fhir_base_url: null,
      logo: null,
      status: 'active',
    }),
  );
}

/** What the database filter means, written the obvious way, with the database's code-point order. */
function oracle(entries: IndexedEntry[], words: string[], systemType?: string): string[] {
  const codePoints = (s: string) => Array.from(s, (c) => c.codePointAt(0)!);
  const cmp = (a: string, b: string) => {
    const x = codePoints(a);
    const y = codePoints(b);
    for (let i = 0; i < Math.min(x.length, y.length); i += 1) if (x[i] !== y[i]) return x[i] - y[i];
    return x.length - y.length;
  };
  return entries
    .filter((e) => !systemType || e.entry.system_type === systemType)
    .filter((e) => words.every((w) => e.words.some((word) => word.startsWith(w))))
    .sort((a, b) => cmp(a.sortName, b.sortName) || cmp(a.entry.id, b.entry.id))
    .map((e) => e.entry.id);
}

describe('DirectoryMemoryIndex', () => {
  const random = lcg(42);
  const entries = generate(600, random);
  const index = new DirectoryMemoryIndex(entries);
  const queries: Array<[string[], string | undefined]> = [
    [[], undefined],
    [[], 'Payer2Payer'],
    [['m'], undefined],
    [['mar'], undefined],
    [['marys'], 'HealthSystem'],
    [['saint', 'mer'], undefined],
    [['elise', 'c'], undefined],
    [['olafur'], 'PayerPatientAccess'],
    [['𝔸'.toLowerCase()], undefined],
    [['ﬀ'], undefined],
    [['nomatch'], undefined],
    [['1', 'st'], undefined],
    [['valley', 'val', 'v'], undefined],
  ];

  it.each(queries)('matches and orders like the database filter: %j %s', (words, systemType) => {
    const expected = oracle(entries, words, systemType);
    const all = index.search(words, systemType as never, 0, 10_000);
    expect(all.total).toBe(expected.length);
    expect(all.entries.map((e) => e.id)).toEqual(expected);
  });

  it('pages are slices of the same order; an offset past the end is empty', () => {
    const expected = oracle(entries, ['m']);
    const page = index.search(['m'], undefined, 20, 20);
    expect(page.total).toBe(expected.length);
    expect(page.entries.map((e) => e.id)).toEqual(expected.slice(20, 40));
    expect(index.search(['m'], undefined, expected.length, 20).entries).toEqual([]);
  });

  it('kept prefix bitmaps: the same answers when asked again, combined otherwise and after eviction', () => {
    const vocabulary = [...new Set(entries.flatMap((e) => e.words))];
    const prefixes = [...new Set(vocabulary.flatMap((w) => [w.slice(0, 1), w.slice(0, 2), w]))];
    const check = (words: string[], systemType?: (typeof SYSTEM_TYPES)[number]) =>
      expect(index.search(words, systemType, 0, 10_000).entries.map((e) => e.id)).toEqual(
        oracle(entries, words, systemType),
      );
    // more distinct prefixes than are kept, each asked alone, then ANDed with others and a type
    for (const prefix of prefixes) check([prefix]);
    for (let i = 0; i < prefixes.length; i += 1) {
      check([prefixes[i], prefixes[(i * 7) % prefixes.length]], SYSTEM_TYPES[i % 3]);
      check([prefixes[i]]);
    }
    expect(prefixes.length).toBeGreaterThan(256);
  });

  it('random word sets agree with the oracle', () => {
    const vocabulary = [...new Set(entries.flatMap((e) => e.words))];
    for (let i = 0; i < 200; i += 1) {
      const words = Array.from({ length: 1 + Math.floor(random() * 2) }, () => {
        const w = vocabulary[Math.floor(random() * vocabulary.length)];
        return w.slice(0, 1 + Math.floor(random() * w.length));
      });
      const systemType = random() < 0.3 ? SYSTEM_TYPES[i % 3] : undefined;
      const expected = oracle(entries, words, systemType);
      const page = index.search(words, systemType, 0, 10_000);
      expect(page.entries.map((e) => e.id)).toEqual(expected);
    }
  });
});
