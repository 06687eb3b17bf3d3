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

export const HISTORY_INDEXES: readonly mongo.IndexDescription[] = [
  { key: { rk: 1, vid: -1 }, name: 'resource_versions' },
  // type and system history: per user, and client-wide on reads
  { key: { v: 1, c: 1, u: 1, t: 1, lu: -1 }, name: 'user_type_history' },
  { key: { v: 1, c: 1, t: 1, lu: -1 }, name: 'type_history' },
  { key: { v: 1, c: 1, u: 1, lu: -1 }, name: 'user_system_history' },
  { key: { v: 1, c: 1, lu: -1 }, name: 'system_history' },
  // Purge: every version of a batch of removed resources (`rk ∈ keys` within the user), and the
  // user's rows left without a current document, in resource-key order.
  { key: { v: 1, c: 1, u: 1, rk: 1 }, name: 'user_history' },
];
