/**
 * Slices of one resource type's key space for the whole-type purge (purge.service.ts): the keys
 * `${v}|${c}|${t}|${id}` of a type are cut by the first character of the id, so a batch removes
 * every document of the user in a few slices with one range delete per collection instead of
 * naming each key. DocumentDB cannot return keys in index order without fetching and sorting every
 * match, so the slices are fixed cut points, not keys read back (see docs/storage.md).
 */

/** One slice: keys `from` ≤ key < `to`. */
export interface KeyRange {
  from: string;
  to: string;
}

/**
 * Cut points inside a type's key space: the characters of a FHIR id (`[A-Za-z0-9\-\.]`, R4
 * datatypes.html#id) in code-point order. The first slice starts at the bare prefix and the last
 * ends past every key of the type, so the slices together cover any id, valid or not.
 */
const CUTS = ['.', ...'0123456789', ...'ABCDEFGHIJKLMNOPQRSTUVWXYZ', ...'abcdefghijklmnopqrstuvwxyz'];

/** How many slices a type's key space has. */
export const SLICES = CUTS.length + 1;

/**
 * Keys of slices `first` … `first + count - 1` of the type whose keys start with `prefix`
 * (`resourceKey(v, c, t, '')`, ending in `|`).
 */
export function sliceRange(prefix: string, first: number, count: number): KeyRange {
  const last = Math.min(SLICES, first + count);
  // '|' + 1 = '}': every key of the type sorts below prefix-without-'|' + '}'
  const end = `${prefix.slice(0, -1)}}`;
  return {
    from: first === 0 ? prefix : prefix + CUTS[first - 1],
    to: last === SLICES ? end : prefix + CUTS[last - 1],
  };
}
