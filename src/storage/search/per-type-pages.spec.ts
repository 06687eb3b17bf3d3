import { mergeInOrder, typesToMerge } from './per-type-pages';

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

  it('merges as one sort of every match would order them, ties across types by type', () => {
    const at = (s: number) => new Date(Date.UTC(2026, 0, 1, 0, 0, s));
    const observations = [
      { t: 'Observation', id: 'b', lu: at(9) },
      { t: 'Observation', id: 'a', lu: at(5) },
      { t: 'Observation', id: 'c', lu: at(5) },
    ];
    const conditions = [
      { t: 'Condition', id: 'z', lu: at(7) },
      { t: 'Condition', id: 'a', lu: at(5) },
    ];
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
