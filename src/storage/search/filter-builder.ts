import type { FhirVersion } from '@app/fhir';
import type { Filter } from './filter-clauses';
import type { ParsedSearch, SearchClause } from '@app/fhir/search/parsed-search';
import { storedClauseCondition, storedReferenceCondition, storedReferencePrefix } from './stored-conditions';
import { INDEX_NAMES } from './search-indexes';
import { KEY_INDEX, LAST_UPDATED_INDEX } from '../indexes';
import { escapeRegex } from '@app/fhir/search/text-normalization';

/**
 * ParsedSearch → MongoDB filter and sort on the `resources` documents (docs/storage.md). The tenant
 * part (`v`, `c`, `u`) is NOT emitted: the repository adds it with its tenant filter. Chains and
 * `_has` need the ids of other resources first: they come back as sub-queries for the repository to
 * run (each an index scan in the caller's tenant scope; a `$lookup` would join without the tenant
 * key on the joined side), and `withChainResults` completes the filter.
 */

/** A chain `subject:Patient.name=x`: run `filter` (plus the tenant part), project `t` and `id`. */
export interface ChainedQuery {
  filter: Filter;
  /** Reference parameter of the searched type the matches are joined on. */
  referenceParam: string;
  /** Where that parameter's entries are read (stored-conditions.ts): the version and searched types. */
  version: FhirVersion;
  types?: readonly string[];
}

/**
 * `_has:Observation:patient:code=x`: run `filter` on the source type (plus tenant), project `idx.ref`,
 * then `idsFromReferences(hasQuery, refs)` gives the ids of the searched type they point to.
 */
export interface HasQuery {
  filter: Filter;
  /** Prefix of the matching `idx.ref` entries: `${referenceParam}|${searchedType}/`. */
  referencePrefix: string;
}

export interface BuiltSearch {
  filter: Filter;
  sort: Record<string, 1 | -1>;
  chained: ChainedQuery[];
  has: HasQuery[];
  /**
   * The index to run the search on (a `hint`), when a clause of the search has one, or
   * `LAST_UPDATED_INDEX` for one type in lastUpdated order bounded by nothing else: see `indexFor`.
   */
  index?: string;
}

export interface BuildFilterOptions {
  /** Reference instant for `ap` on dates (defaults to the current time). */
  now?: Date;
}

const NOT_DELETED: Filter = { del: { $ne: true } };

function contentCondition(alternatives: string[][]): Filter {
  // Every word must be present; the last one may be a prefix (typing-ahead), search.html#content.
  const conditions = alternatives.map((words) => {
    const last = words[words.length - 1];
    const whole = words.slice(0, -1);
    const prefix: Filter = { 'idx.txt': { $regex: `^${escapeRegex(last)}` } };
    return whole.length === 0 ? prefix : { $and: [{ 'idx.txt': { $all: whole } }, prefix] };
  });
  return conditions.length === 1 ? conditions[0] : { $or: conditions };
}

function subQueryFilter(
  version: FhirVersion,
  types: readonly string[],
  clause: SearchClause,
  now: Date,
  extra?: Filter,
): Filter {
  const conditions = [storedClauseCondition(version, types, clause, now)];
  if (extra) conditions.push(extra);
  return { t: types.length === 1 ? types[0] : { $in: [...types] }, ...NOT_DELETED, $and: conditions };
}

const SORT_FIELDS: Readonly<Record<string, string>> = { _lastUpdated: 'lu' };

/**
 * Index of a clause's condition, by how few resources such a clause usually matches: a reference
 * (one patient's resources) before a token (one code, many patients) before a string prefix before a
 * range. Conditions no index bounds (negations, `:missing`, `:contains`, `:text`, `system|`) have none.
 */
const INDEX_BY_SELECTIVITY: ReadonlyArray<[string, (clause: SearchClause) => boolean]> = [
  [INDEX_NAMES.ref, (c) => c.type === 'reference' && c.modifier !== 'identifier'],
  [INDEX_NAMES.tok, (c) => (c.type === 'token' && c.modifier === undefined) || c.modifier === 'identifier'],
  [INDEX_NAMES.uri, (c) => c.type === 'uri' && c.modifier === undefined],
  [INDEX_NAMES.str, (c) => c.type === 'string' && (c.modifier === undefined || c.modifier === 'exact')],
  [INDEX_NAMES.bkt, (c) => c.type === 'date' || c.type === 'number' || c.type === 'quantity'],
];

/**
 * The index the search runs on. DocumentDB's planner does not know how selective an entry of a
 * multikey index is: measured at 195,000 resources it ran `Observation?subject=X&date=ge2015&date=lt2020`
 * on the date buckets (6.4 s) and `subject=X&code=Y` on a tenant-prefix index (2.8 s) rather than on
 * the references. A hint with the most selective clause's index is standard MongoDB and answers
 * the same on both engines (MongoDB would mostly pick it by trial anyway). Without such a clause
 * a type's search in lastUpdated order names that index (`inLastUpdatedOrder`); others (`_id`,
 * `_type`, other sorts) are left to the planner.
 */
function indexFor(parsed: ParsedSearch): string | undefined {
  const indexable = parsed.clauses.filter(
    (c) => !c.param.startsWith('_') && c.modifier !== 'missing' && c.modifier !== 'not',
  );
  for (const [index, serves] of INDEX_BY_SELECTIVITY) if (indexable.some(serves)) return index;
  if (parsed.chains.length > 0) return INDEX_NAMES.ref;
  if (parsed.content.length > 0) return INDEX_NAMES.txt;
  if (inKeyOrder(parsed)) return KEY_INDEX;
  return inLastUpdatedOrder(parsed) ? LAST_UPDATED_INDEX : undefined;
}

/**
 * One type sorted by `_id` and bounded by nothing else: the primary key holds that order (the
 * repository bounds the read to the type's key space, a user's runs on the user's own index).
 */
function inKeyOrder(parsed: ParsedSearch): boolean {
  return (
    typeof parsed.type === 'string' &&
    parsed.clauses.length === 0 &&
    parsed.has.length === 0 &&
    parsed.sort[0]?.param === '_id'
  );
}

/**
 * One type (or a `_type` list: one scan per type, merged, resource.repository.ts `mergedPage`), in
 * lastUpdated order, bounded by nothing but `_lastUpdated`: read from the type's lastUpdated index
 * in its order, the page stops after its last match where the engine can walk an index in order
 * (MongoDB; DocumentDB with its RUM fork, docs/storage.md "Sorted pages"). Named, because
 * DocumentDB's planner costs it below a multikey index of the same prefix (a client's
 * `Observation` count ran on the `_content` words: 52,475 entries for 5,983 resources).
 */
function inLastUpdatedOrder(parsed: ParsedSearch): boolean {
  return (
    (typeof parsed.type === 'string' || (parsed.types !== undefined && parsed.types.length > 0)) &&
    parsed.clauses.every((c) => c.param === '_lastUpdated' && c.modifier === undefined) &&
    parsed.has.length === 0 &&
    (parsed.sort.length === 0 || parsed.sort[0].param === '_lastUpdated')
  );
}

/**
 * `_sort` → MongoDB sort; default newest first. The id always ends it so that paging is stable, in
 * the direction opposite to the key before it: the indexes hold (key descending, id ascending), so
 * a descending sort reads one forwards and an ascending one backwards, both in index order. Within
 * one type `_id` is the key in id order (`${v}|${c}|${t}|${id}`): the primary key serves it.
 */
function buildSort(parsed: ParsedSearch): Record<string, 1 | -1> {
  const sort: Record<string, 1 | -1> = {};
  const keys = parsed.sort.length > 0 ? parsed.sort : [{ param: '_lastUpdated', descending: true }];
  const idField = typeof parsed.type === 'string' ? '_id' : 'id';
  for (const key of keys) {
    const field = key.param === '_id' ? idField : (SORT_FIELDS[key.param] ?? `idx.srt.${key.param}`);
    sort[field] = key.descending ? -1 : 1;
    // unique: a key after it orders nothing, and would keep the primary key from serving the sort
    if (field === '_id') break;
  }
  if (!('id' in sort) && !('_id' in sort)) sort.id = sort[Object.keys(sort).pop()!] === -1 ? 1 : -1;
  return sort;
}

export function buildFilter(parsed: ParsedSearch, options: BuildFilterOptions = {}): BuiltSearch {
  const now = options.now ?? new Date();
  const filter: Filter = {};
  if (parsed.type) filter.t = parsed.type;
  else if (parsed.types) filter.t = { $in: [...parsed.types] };
  Object.assign(filter, NOT_DELETED);
  const index = indexFor(parsed);
  // Range buckets only where the search may run on their index (filter-clauses.ts RangeBuckets).
  const buckets = index === undefined || index === INDEX_NAMES.bkt ? 'bounded' : 'unbounded';
  const scope = parsed.type ? [parsed.type] : parsed.types;
  const conditions: Filter[] = parsed.clauses.map((clause) =>
    storedClauseCondition(parsed.version, scope, clause, now, buckets),
  );
  for (const alternatives of parsed.content) conditions.push(contentCondition(alternatives));
  if (conditions.length > 0) filter.$and = conditions;

  const chained = parsed.chains.map((chain) => ({
    referenceParam: chain.referenceParam,
    version: parsed.version,
    types: scope,
    filter: subQueryFilter(parsed.version, chain.targetTypes, chain.clause, now),
  }));
  const has = parsed.has.map((clause) => {
    const referencePrefix = storedReferencePrefix(
      parsed.version,
      clause.sourceType,
      clause.referenceParam,
      parsed.type ?? '',
    );
    const pointsBack = { 'idx.ref': { $regex: `^${escapeRegex(referencePrefix)}` } };
    const filter = subQueryFilter(parsed.version, [clause.sourceType], clause.clause, now, pointsBack);
    return { referencePrefix, filter };
  });
  return { filter, sort: buildSort(parsed), chained, has, index };
}

/** Ids of the searched type referenced by the `idx.ref` arrays of the documents a HasQuery matched. */
export function idsFromReferences(
  query: HasQuery,
  referenceArrays: ReadonlyArray<readonly string[] | undefined>,
): string[] {
  const ids = new Set<string>();
  for (const references of referenceArrays) {
    for (const entry of references ?? []) {
      if (entry.startsWith(query.referencePrefix)) ids.add(entry.slice(query.referencePrefix.length));
    }
  }
  return [...ids];
}

export interface SubQueryResults {
  /** Per ChainedQuery (same order): `Type/id` of each matching target resource. */
  chained: ReadonlyArray<readonly string[]>;
  /** Per HasQuery (same order): ids of the searched type (see idsFromReferences). */
  has: ReadonlyArray<readonly string[]>;
}

/** The final filter once the sub-queries ran; an empty result matches nothing, as it should. */
export function withChainResults(built: BuiltSearch, results: SubQueryResults): Filter {
  const conditions: Filter[] = Array.isArray(built.filter.$and) ? [...(built.filter.$and as Filter[])] : [];
  built.chained.forEach((query, position) => {
    const references = results.chained[position] ?? [];
    conditions.push(storedReferenceCondition(query.version, query.types, query.referenceParam, references));
  });
  built.has.forEach((_query, position) =>
    conditions.push({ id: { $in: [...(results.has[position] ?? [])] } }),
  );
  return conditions.length > 0 ? { ...built.filter, $and: conditions } : { ...built.filter };
}
