import { compareKeys, everythingPageRows, type OrderedKey } from './everything-page';

/** The page as everything.service.ts reads it: the compartment's window, its end only when reached (or `pass`). */
function pageOf(
  lead: string[],
  compartment: string[],
  outside: string[],
  skip: number,
  count: number,
  pass = false,
) {
  const compartmentStart = Math.max(0, skip - lead.length);
  const slots = Math.max(0, count - Math.max(0, lead.length - skip));
  const window = compartment.slice(compartmentStart, compartmentStart + slots);
  const ended = window.length < slots;
  const known = ended || pass;
  return everythingPageRows(
    {
      lead,
      compartment: window,
      compartmentStart,
      compartmentEnd: known ? compartment.length : undefined,
      outside: known ? outside : [],
    },
    skip,
    count,
  );
}

describe('everything page rows', () => {
  it('gives every page of lead, compartment and outside resources in that order, whatever the sizes', () => {
    const names = (prefix: string, n: number) => Array.from({ length: n }, (_, i) => `${prefix}${i}`);
    for (const leadSize of [0, 1]) {
      for (const compartmentSize of [0, 1, 4, 9]) {
        for (const outsideSize of [0, 1, 3]) {
          const lead = names('p', leadSize);
          const compartment = names('c', compartmentSize);
          const outside = names('o', outsideSize);
          const all = [...lead, ...compartment, ...outside];
          for (const count of [1, 2, 3, 10]) {
            for (let skip = 0; skip <= all.length + 2; skip++) {
              expect(pageOf(lead, compartment, outside, skip, count)).toEqual(all.slice(skip, skip + count));
              expect(pageOf(lead, compartment, outside, skip, count, true)).toEqual(
                all.slice(skip, skip + count),
              );
            }
          }
        }
      }
    }
  });

  it('stops where the compartment read stops while its end is unknown', () => {
    expect(
      everythingPageRows({ lead: [], compartment: ['c0', 'c1'], compartmentStart: 0, outside: ['o0'] }, 0, 5),
    ).toEqual(['c0', 'c1']);
  });

  it('a page past the end, and _count=0, hold nothing', () => {
    const parts = { lead: ['p'], compartment: [], compartmentStart: 5, compartmentEnd: 5, outside: ['o'] };
    expect(everythingPageRows(parts, 7, 10)).toEqual([]);
    expect(everythingPageRows(parts, 0, 0)).toEqual([]);
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
});
