/**
 * A page in lastUpdated order whose filter is an `$in` on the leading field of its index, served as
 * one ordered scan per value, merged here: an engine that walks a `(…, x, …, lu, id)` index in order
 * for one value of `x` still sorts every match of an `$in` (DocumentDB 0.112 with the extended RUM:
 * several ranges are no ordered scan). Two such filters:
 * - a type list (`t: {$in: [A, B]}`, e.g. `GET /r4?_type=Observation,Condition`) on the lastUpdated
 *   index; measured on that engine, a page of 21 over 2 types of 5,000 each: 48.8 ms sorted, 4.6 ms
 *   as per-type scans merged (docs/storage.md "Sorted pages");
 * - a few references (`idx.ref: {$in: ['patient|Patient/a', 'patient|Patient/b']}`,
 *   `Observation?patient=a,b`) on the references index, which holds `(lu, id)` after the reference
 *   and type. One reference is one equality, one ordered query (a reference to this server is
 *   stored and searched in its relative form only: local-references.ts): no merge, which for a
 *   patient's few Conditions cost more than the one sorted query it replaced.
 * Each value's query reads at most `skip + limit` index keys, and the merge keeps the page's.
 */

type SortOrder = Readonly<Record<string, 1 | -1>>;

/** The key fields a merged page is ordered by (lastUpdated, then id): those the indexes hold. */
const MERGEABLE_FIELDS = new Set(['lu', 'id']);

/** At most this many values are read one by one (a longer `$in` is one sorted query, as before). */
const MAX_VALUES_TO_MERGE = 4;

function inLastUpdatedOrder(sort: SortOrder): boolean {
  const fields = Object.keys(sort);
  return fields[0] === 'lu' && fields.every((field) => MERGEABLE_FIELDS.has(field));
}

/** The strings of `{$in: [...]}` and nothing else, or undefined. */
function inList(condition: unknown): string[] | undefined {
  if (typeof condition !== 'object' || condition === null) return undefined;
  if (Object.keys(condition).length !== 1) return undefined;
  const values = (condition as { $in?: unknown }).$in;
  if (!Array.isArray(values) || !values.every((value) => typeof value === 'string')) return undefined;
  return [...new Set(values)];
}

/** The types of a filter's `t: {$in: [...]}`, when the page may be served per type; else undefined. */
export function typesToMerge(filter: object, sort: SortOrder): string[] | undefined {
  if (!inLastUpdatedOrder(sort)) return undefined;
  return inList((filter as { t?: unknown }).t);
}

/**
 * The filters of a reference search's page, one per reference value, when the filter's only
 * condition besides its scalars is one `idx.ref: {$in: [...]}` of a few values; else undefined.
 */
export function referencesToMerge<F extends { $and?: unknown }>(filter: F, sort: SortOrder): F[] | undefined {
  if (!inLastUpdatedOrder(sort) || !Array.isArray(filter.$and) || filter.$and.length !== 1) return undefined;
  const [condition] = filter.$and as unknown[];
  if (typeof condition !== 'object' || condition === null || Object.keys(condition).length !== 1)
    return undefined;
  const values = inList((condition as { 'idx.ref'?: unknown })['idx.ref']);
  if (!values || values.length < 2 || values.length > MAX_VALUES_TO_MERGE) return undefined;
  return values.map((value) => ({ ...filter, $and: [{ 'idx.ref': value }] }));
}

/** The row's value of a sort field, comparable with `<` (dates by their time). */
function keyOf(row: Record<string, unknown>, field: string): number | string {
  const value = row[field];
  return value instanceof Date ? value.getTime() : String(value);
}

/**
 * Rows of several scans in `sort` order, each document once (one resource may match two values),
 * ties (same lastUpdated and id in two types) broken by key so that the pages of one search never
 * overlap or skip.
 */
export function mergeInOrder<R extends { _id: string }>(perScan: readonly R[][], sort: SortOrder): R[] {
  const fields = Object.entries(sort);
  const unique = [...new Map(perScan.flat().map((row) => [row._id, row])).values()];
  return unique.sort((a, b) => {
    for (const [field, direction] of fields) {
      const x = keyOf(a, field);
      const y = keyOf(b, field);
      if (x !== y) return (x < y ? -1 : 1) * direction;
    }
    return a._id < b._id ? -1 : a._id > b._id ? 1 : 0;
  });
}
