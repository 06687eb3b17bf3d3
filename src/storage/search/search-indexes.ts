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
 * `bkt` selects their candidates. The reference index puts the type after the references: one
 * index bounds a typed look-up (`t` and `idx.ref`, both engines) and one across types (the
 * Patient compartment, `_type`-less searches) by its `v, c, idx.ref` prefix. Each index entry
 * costs every write: a second, type-less index over the same references cost a tenth of a
 * document's index work (docs/storage.md).
 */
/** Names of the search indexes (the filter builder hints them, filter-builder.ts `indexFor`). */
export const INDEX_NAMES = {
  /** `{v, c, t, idx.tok, lu, id}`: token look-ups; one token's resources in the default order. */
  tok: 'search_tok',
  str: 'search_str',
  /**
   * `{v, c, idx.ref, t, lu, id}`: references of one type, of several, or of any (the Patient
   * compartment); one reference's resources of one type in the default order.
   */
  ref: 'search_references',
  uri: 'search_uri',
  bkt: 'search_range_buckets',
  txt: 'search_txt',
} as const;

/**
 * `fullText`: the deployment's setting; off, `_content` words are neither extracted nor indexed
 * (`search_txt` is then among the indexes dropped at start-up: each index costs every write).
 */
export function indexSpecs(fullText: boolean): SearchIndexSpec[] {
  const tenantType = { v: 1, c: 1, t: 1 } as const;
  const specs: SearchIndexSpec[] = [
    // the lastUpdated order after the token: a code's resources newest first (`Observation?code=X`,
    // code + date) read in index order and stop after the page instead of sorting every match
    { key: { ...tenantType, 'idx.tok': 1, lu: -1, id: 1 }, name: INDEX_NAMES.tok },
    { key: { ...tenantType, 'idx.str': 1 }, name: INDEX_NAMES.str },
    // the lastUpdated order after the type: one reference's resources in the default order (a
    // patient's Observations, newest first) are read in index order, no sort: the page stops after
    // its rows, or with its capped count in the same query after the cap (search-executor.ts)
    { key: { v: 1, c: 1, 'idx.ref': 1, t: 1, lu: -1, id: 1 }, name: INDEX_NAMES.ref },
    { key: { ...tenantType, 'idx.uri': 1 }, name: INDEX_NAMES.uri },
    { key: { ...tenantType, 'idx.bkt': 1 }, name: INDEX_NAMES.bkt },
  ];
  if (fullText) specs.push({ key: { ...tenantType, 'idx.txt': 1 }, name: INDEX_NAMES.txt });
  return specs;
}

/** Indexes of earlier layouts, or of an option now off, that the current one does not use (dropped at start-up: write cost). */
export function retiredIndexNames(fullText: boolean): string[] {
  const retired = [
    'search_date_low',
    'search_date_high',
    'search_num',
    'search_qty',
    // references by type and across types, in two indexes: `search_references` serves both
    'search_ref',
    'search_ref_any_type',
  ];
  return fullText ? retired : [...retired, INDEX_NAMES.txt];
}
