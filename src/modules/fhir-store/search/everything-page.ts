/**
 * The order of `Patient/$everything`'s pages (everything.service.ts reads them): the lead (one
 * Patient's `$everything`: the Patient, at position 0; none at the type level), then the compartment
 * in the order an index holds it (one Patient's: by type, newest first; every Patient's: by type,
 * then id), then the resources the compartment references outside it (Practitioner, Organization
 * …) by type, then id. Each page reads its own window of the compartment, in index order, and
 * stops after it; where the compartment ends, and so the total and the outside resources, are
 * known only from a pass over the whole compartment, run for the page that reaches its end (or
 * when the total is asked for).
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

/** What a page of `$everything` was laid out from. */
export interface EverythingParts<T> {
  /** The rows before the compartment (the Patient of one Patient's `$everything`), all of them. */
  lead: readonly T[];
  /** The compartment's rows read for the page, from position `compartmentStart` of the compartment. */
  compartment: readonly T[];
  compartmentStart: number;
  /** How many rows the compartment has, when known (from the page that reached its end, or a pass). */
  compartmentEnd?: number;
  /** The resources referenced outside the compartment, in order (known with `compartmentEnd`). */
  outside: readonly T[];
}

/**
 * The rows at positions `[skip, skip + count)` of lead, compartment and outside resources, in that
 * order; it ends early where what was read ends (past the compartment while its end is unknown).
 */
export function everythingPageRows<T>(parts: EverythingParts<T>, skip: number, count: number): T[] {
  const { lead, compartment, compartmentStart, compartmentEnd, outside } = parts;
  const page: T[] = [];
  for (let position = skip; position < skip + count; position++) {
    const at = position - lead.length;
    if (at < 0) page.push(lead[position]);
    else if (
      at - compartmentStart < compartment.length &&
      at >= compartmentStart &&
      (compartmentEnd === undefined || at < compartmentEnd)
    )
      page.push(compartment[at - compartmentStart]);
    else if (compartmentEnd !== undefined && at >= compartmentEnd && at - compartmentEnd < outside.length)
      page.push(outside[at - compartmentEnd]);
    else break;
  }
  return page;
}
