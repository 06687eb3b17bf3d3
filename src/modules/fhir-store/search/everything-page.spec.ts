import { compareKeys, compartmentBefore, everythingPageLayout, type OrderedKey } from './everything-page';

/** A small deterministic generator (the test must not depend on Math.random). */
function generator(seed: number): () => number {
  let state = seed;
  return () => {
    state = (state * 1103515245 + 12345) % 2 ** 31;
    return state / 2 ** 31;
  };
}

const TYPES = [
  'Condition',
  'Encounter',
  'Location',
  'Observation',
  'Organization',
  'Patient',
  'Practitioner',
];

/** The page the layout gives, resolved against the two sorted parts. */
function pageOf(compartment: OrderedKey[], singles: OrderedKey[], skip: number, count: number) {
  const counts = new Map<string, number>();
  for (const key of compartment) counts.set(key.t, (counts.get(key.t) ?? 0) + 1);
  const withBefore = singles.map((single) => ({
    before: compartmentBefore(
      single,
      counts,
      compartment.filter((key) => key.t === single.t && key.id < single.id).length,
    ),
  }));
  const layout = everythingPageLayout(withBefore, compartment.length, skip, count);
  const window = compartment.slice(layout.compartmentSkip, layout.compartmentSkip + layout.compartmentLimit);
  let taken = 0;
  const page = layout.slots.map((slot) => (slot === 'compartment' ? window[taken++] : singles[slot]));
  expect(taken).toBe(window.length);
  return { page, layout };
}

describe('everything page layout', () => {
  it('gives every page of the (type, id) merge of compartment and singles, whatever the mix', () => {
    const random = generator(7);
    for (let round = 0; round < 30; round++) {
      const keys = new Map<string, OrderedKey>();
      const size = Math.floor(random() * 40);
      for (let i = 0; i < size; i++) {
        const key = { t: TYPES[Math.floor(random() * TYPES.length)], id: `id-${Math.floor(random() * 99)}` };
        keys.set(`${key.t}/${key.id}`, key);
      }
      const all = [...keys.values()].sort(compareKeys);
      const singles = all.filter(() => random() < 0.25);
      const compartment = all.filter((key) => !singles.includes(key));
      for (const count of [1, 3, 10]) {
        for (let skip = 0; skip <= all.length + 2; skip++) {
          const { page, layout } = pageOf(compartment, singles, skip, count);
          expect(layout.total).toBe(all.length);
          expect(page).toEqual(all.slice(skip, skip + count));
        }
      }
    }
  });

  it('orders by type, then id, binary (as the database sorts without a collation)', () => {
    const keys: OrderedKey[] = [
      { t: 'Patient', id: 'b' },
      { t: 'Observation', id: 'z' },
      { t: 'Patient', id: 'B' },
      { t: 'Patient', id: 'a' },
    ];
    expect([...keys].sort(compareKeys)).toEqual([
      { t: 'Observation', id: 'z' },
      { t: 'Patient', id: 'B' },
      { t: 'Patient', id: 'a' },
      { t: 'Patient', id: 'b' },
    ]);
  });

  it('an empty page past the end, and _count=0, lay out nothing', () => {
    expect(everythingPageLayout([{ before: 0 }], 5, 6, 10)).toEqual({
      total: 6,
      compartmentSkip: 5,
      compartmentLimit: 0,
      slots: [],
    });
    expect(everythingPageLayout([{ before: 0 }], 5, 0, 0).slots).toEqual([]);
  });
});
