import type { mongo } from 'mongoose';
import { indexSpecs } from './search/search-indexes';

/**
 * The one index list of each resource collection (docs/storage.md). Every index costs each write
 * (on DocumentDB each one but `_id` is a RUM index with a fixed cost per insert), so a reader that
 * needs another one adds it here, where that cost is visible.
 */

/** Per-user scans in (type, key) order: purge batches, a user's plain type search, export files. */
export const USER_TYPE_INDEX = 'user_type';

/**
 * The primary key (`${v}|${c}|${t}|${id}`, every engine's own `_id` index): within one type of a
 * client it is in `id` order, so a client's `_sort=_id` page and export files read it bounded by
 * the type's key space (key-space.ts); a user's read the user's `USER_TYPE_INDEX` instead.
 */
export const KEY_INDEX = '_id_';

/**
 * Type and lastUpdated, newest first: the default order of a search, `_lastUpdated` ranges, export
 * ranges, purge `_before`. A search names the client-wide one; the repository runs a user's search on
 * the user's own (`forContext`).
 */
export const LAST_UPDATED_INDEX = 'type_lastUpdated';
export const USER_LAST_UPDATED_INDEX = 'user_type_lastUpdated';

/** `fullText`: the deployment's full-text setting (`Settings.fullText`: the `_content` words index). */
export const resourceIndexes = (fullText: boolean): readonly mongo.IndexDescription[] => [
  { key: { v: 1, c: 1, t: 1, lu: -1, id: 1 }, name: LAST_UPDATED_INDEX },
  // A user's `_lastUpdated` and plain type searches: on `type_lastUpdated` the engine reads
  // every user's entries of the range and tests `u` on each stored document.
  { key: { v: 1, c: 1, u: 1, t: 1, lu: -1, id: 1 }, name: USER_LAST_UPDATED_INDEX },
  { key: { v: 1, c: 1, u: 1, t: 1, _id: 1 }, name: USER_TYPE_INDEX },
  // Multikey `idx.*` indexes of the search entries (libs/fhir/src/search/search-index.ts).
  ...indexSpecs(fullText),
];

/**
 * Every history row pays each of these on insert, so there is no index for the purge alone: its
 * `rk ∈ keys` and key-slice deletes read `resource_versions` (the key leads it; the tenant keys
 * filter the rows), and its sweep for leftovers reads the user's rows newest first on the user's
 * page indexes.
 *
 * The history page indexes (history.repository.ts names one for each page): instance history in
 * version order; type and system history, per user and client-wide, newest first with `_id` as the
 * tie-break, the page's own order `{lu: -1, _id: -1}`, so an engine that walks an index in order
 * stops after the page instead of sorting the range's rows.
 */
export const HISTORY_PAGE_INDEXES = {
  instance: 'resource_versions',
  userType: 'user_type_history_ordered',
  type: 'type_history_ordered',
  userSystem: 'user_system_history_ordered',
  system: 'system_history_ordered',
} as const;

export const HISTORY_INDEXES: readonly mongo.IndexDescription[] = [
  { key: { rk: 1, vid: -1 }, name: HISTORY_PAGE_INDEXES.instance },
  { key: { v: 1, c: 1, u: 1, t: 1, lu: -1, _id: -1 }, name: HISTORY_PAGE_INDEXES.userType },
  { key: { v: 1, c: 1, t: 1, lu: -1, _id: -1 }, name: HISTORY_PAGE_INDEXES.type },
  { key: { v: 1, c: 1, u: 1, lu: -1, _id: -1 }, name: HISTORY_PAGE_INDEXES.userSystem },
  { key: { v: 1, c: 1, lu: -1, _id: -1 }, name: HISTORY_PAGE_INDEXES.system },
];

/**
 * History indexes of earlier releases, dropped at start-up (each costs every write): the type and
 * system history indexes without the `_id` tie-break, which left every page a sort of its range;
 * the purge's own `{v,c,u,rk}` (its look-ups are served by the indexes above).
 */
export const RETIRED_HISTORY_INDEXES: readonly string[] = [
  'user_type_history',
  'type_history',
  'user_system_history',
  'system_history',
  'user_history',
];
