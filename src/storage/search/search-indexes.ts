/**
 * The MongoDB indexes over the search entries `idx` that libs/fhir extracts
 * (libs/fhir/src/search/search-index.ts describes the entries).
 */
/** Index definitions of the search entries in the `resources` collection (src/storage/indexes.ts). */
export interface SearchIndexSpec {
  key: Record<string, 1 | -1>;
  name: string;
}

/**
 * Each array index is prefixed with the tenant/type fields every search carries (`v`, `c`, `t`);
 * `u` is left out so that one index serves both one-user and whole-client searches (a user's
 * resources are a filter on the fetched candidates). MongoDB allows one multikey (array) field per
 * compound index, which this respects. `dtl`, `dth`, `num` and `qty` have no index of their own:
 * `bkt` selects their candidates.
 */
/** Names of the search indexes (the filter builder hints them, filter-builder.ts `indexFor`). */
export const INDEX_NAMES = {
  tok: 'search_tok',
  str: 'search_str',
  ref: 'search_ref',
  uri: 'search_uri',
  bkt: 'search_range_buckets',
  txt: 'search_txt',
  /** `{v, c, idx.ref}`: references across types (the Patient compartment, `_revinclude`). */
  refAnyType: 'search_ref_any_type',
} as const;

/**
 * `fullText`: the deployment's setting; off, `_content` words are neither extracted nor indexed
 * (`search_txt` is then among the indexes dropped at start-up: each index costs every write).
 */
export function indexSpecs(fullText: boolean): SearchIndexSpec[] {
  const tenantType = { v: 1, c: 1, t: 1 } as const;
  const specs: SearchIndexSpec[] = [
    { key: { ...tenantType, 'idx.tok': 1 }, name: INDEX_NAMES.tok },
    { key: { ...tenantType, 'idx.str': 1 }, name: INDEX_NAMES.str },
    { key: { ...tenantType, 'idx.ref': 1 }, name: INDEX_NAMES.ref },
    { key: { ...tenantType, 'idx.uri': 1 }, name: INDEX_NAMES.uri },
    { key: { ...tenantType, 'idx.bkt': 1 }, name: INDEX_NAMES.bkt },
    // Type-less: $everything, _revinclude and `_type`-less system searches look references up across types.
    { key: { v: 1, c: 1, 'idx.ref': 1 }, name: INDEX_NAMES.refAnyType },
  ];
  if (fullText) specs.push({ key: { ...tenantType, 'idx.txt': 1 }, name: INDEX_NAMES.txt });
  return specs;
}

/** Indexes of earlier layouts, or of an option now off, that the current one does not use (dropped at start-up: write cost). */
export function retiredIndexNames(fullText: boolean): string[] {
  const retired = ['search_date_low', 'search_date_high', 'search_num', 'search_qty'];
  return fullText ? retired : [...retired, INDEX_NAMES.txt];
}
