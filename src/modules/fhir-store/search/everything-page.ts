/**
 * Paging of the type-level `Patient/$everything` (every Patient of the caller's scope; one
 * Patient's is read in index order instead: everything.service.ts) without one query over everything (measured on DocumentDB, a
 * patient with 2,177 resources: one `$or` of the Patient, its compartment and the resources they
 * reference, sorted, took 850 ms per page and as much again for its count; the compartment alone,
 * sorted and limited, 56 ms).
 *
 * The result is ordered by resource type, then id. It is the merge of two parts: the compartment
 * (sorted and paged with skip/limit in the database) and a few "single" resources fetched by key
 * (the Patient and what the compartment references outside it: Practitioner, Organization …).
 * Knowing how many compartment resources come before each single (from per-type counts), the
 * page's slots are laid out here, so the page needs only its own share of the compartment.
 */

export interface OrderedKey {
  t: string;
  id: string;
}

/** Binary order of (type, id), as the database sorts `{t: 1, id: 1}` without a collation. */
export function compareKeys(a: OrderedKey, b: OrderedKey): number {
  if (a.t !== b.t) return a.t < b.t ? -1 : 1;
  if (a.id === b.id) return 0;
  return a.id < b.id ? -1 : 1;
}

/**
 * Compartment resources ordered before `single`: those of lower types (from `countsByType`), plus,
 * when the compartment has resources of the single's own type, `sameTypeBefore` of them.
 */
export function compartmentBefore(
  single: OrderedKey,
  countsByType: ReadonlyMap<string, number>,
  sameTypeBefore = 0,
): number {
  let before = sameTypeBefore;
  for (const [type, count] of countsByType) if (type < single.t) before += count;
  return before;
}

export interface EverythingPageLayout {
  total: number;
  /** The compartment window of this page: skip and limit of its sorted query. */
  compartmentSkip: number;
  compartmentLimit: number;
  /** For each entry of the page in order: the index of a single, or 'compartment' (the next one). */
  slots: Array<number | 'compartment'>;
}

/**
 * The page `[skip, skip + count)` of the merge. `singles` are in (type, id) order, each with the
 * number of compartment resources ordered before it (non-decreasing along the list).
 */
export function everythingPageLayout(
  singles: ReadonlyArray<{ before: number }>,
  compartmentTotal: number,
  skip: number,
  count: number,
): EverythingPageLayout {
  const total = compartmentTotal + singles.length;
  // Single i sits at i + before(i): i singles and before(i) compartment resources precede it.
  let next = 0;
  while (next < singles.length && next + singles[next].before < skip) next++;
  const compartmentSkip = skip - next;
  const slots: Array<number | 'compartment'> = [];
  let compartmentLimit = 0;
  for (let position = skip; position < Math.min(skip + count, total); position++) {
    if (next < singles.length && next + singles[next].before === position) {
      slots.push(next++);
    } else {
      slots.push('compartment');
      compartmentLimit++;
    }
  }
  return { total, compartmentSkip, compartmentLimit, slots };
}
