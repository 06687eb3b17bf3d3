import { mergeInOrder, referencesToMerge, typesToMerge } from './per-type-pages';

const NEWEST_FIRST = { lu: -1, id: 1 } as const;

describe('per-type pages', () => {
  it('serves a type list in lastUpdated (then id) order per type; nothing else', () => {
    expect(typesToMerge({ t: { $in: ['Observation', 'Condition', 'Observation'] } }, NEWEST_FIRST)).toEqual([
      'Observation',
      'Condition',
    ]);
    expect(typesToMerge({ t: { $in: ['Observation'] } }, { lu: 1, id: 1 })).toEqual(['Observation']);
    expect(typesToMerge({ t: 'Observation' }, NEWEST_FIRST)).toBeUndefined();
    expect(typesToMerge({ t: { $in: ['A'], $nin: ['B'] } }, NEWEST_FIRST)).toBeUndefined();
    expect(typesToMerge({ t: { $in: ['A', 'B'] } }, { id: 1 })).toBeUndefined();
    expect(typesToMerge({ t: { $in: ['A', 'B'] } }, { lu: -1, 'idx.srt.date': 1, id: 1 })).toBeUndefined();
    expect(typesToMerge({}, NEWEST_FIRST)).toBeUndefined();
  });

  it('serves a reference in a few forms per form, when it is the only condition, in lastUpdated order', () => {
    const forms = ['patient|Patient/p', 'patient|https://base/r4/Patient/p'];
    const filter = { t: 'Observation', $and: [{ 'idx.ref': { $in: forms } }], v: 'r4', c: 'x', del: false };
    expect(referencesToMerge(filter, NEWEST_FIRST)).toEqual(
      forms.map((form) => ({ t: 'Observation', $and: [{ 'idx.ref': form }], v: 'r4', c: 'x', del: false })),
    );
    expect(referencesToMerge(filter, { lu: 1, id: -1 })).toHaveLength(2);
    expect(referencesToMerge(filter, { 'idx.srt.date': -1, id: 1 })).toBeUndefined();
    // one form, another condition beside it, or many forms: one query
    expect(referencesToMerge({ $and: [{ 'idx.ref': { $in: ['a'] } }] }, NEWEST_FIRST)).toBeUndefined();
    expect(
      referencesToMerge({ $and: [{ 'idx.ref': { $in: forms } }, { 'idx.tok': 'code|x' }] }, NEWEST_FIRST),
    ).toBeUndefined();
    expect(
      referencesToMerge({ $and: [{ 'idx.ref': { $in: ['a', 'b', 'c', 'd', 'e'] } }] }, NEWEST_FIRST),
    ).toBeUndefined();
    expect(referencesToMerge({ $and: [{ 'idx.ref': 'a' }] }, NEWEST_FIRST)).toBeUndefined();
  });

  it('merges as one sort of every match would order them, each document once, ties by key', () => {
    const at = (s: number) => new Date(Date.UTC(2026, 0, 1, 0, 0, s));
    const row = (t: string, id: string, lu: Date) => ({ _id: `r4|x|${t}|${id}`, t, id, lu });
    const observations = [
      row('Observation', 'b', at(9)),
      row('Observation', 'a', at(5)),
      row('Observation', 'c', at(5)),
    ];
    const conditions = [row('Condition', 'z', at(7)), row('Condition', 'a', at(5))];
    // a resource both scans found (a reference in two forms) is served once
    expect(mergeInOrder([observations, [observations[0]]], NEWEST_FIRST)).toEqual(observations);
    const merged = mergeInOrder([observations, conditions], NEWEST_FIRST);
    expect(merged.map((row) => `${row.t}/${row.id}`)).toEqual([
      'Observation/b',
      'Condition/z',
      'Condition/a',
      'Observation/a',
      'Observation/c',
    ]);
    const oldestFirst = mergeInOrder([observations, conditions], { lu: 1, id: 1 });
    expect(oldestFirst.map((row) => `${row.t}/${row.id}`)).toEqual([
      'Condition/a',
      'Observation/a',
      'Observation/c',
      'Condition/z',
      'Observation/b',
    ]);
  });
});
