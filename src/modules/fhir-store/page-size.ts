/** Default and largest page size of searches, history and `$everything` (docs/api.md §13: 10 per bundle by default; a larger `_count` is clamped to the largest). */
export const DEFAULT_PAGE_SIZE = 10;
export const MAX_PAGE_SIZE = 100;
