/**
 * The search index stored on each current resource document as `idx` (docs/storage.md). Flat typed
 * arrays of strings behind multikey indexes led by the tenant fields: MongoDB and DocumentDB answer
 * an equality or `$in` on them with a bounded index scan (DocumentDB does not bound two-sided
 * ranges or regexes on a multikey field: range-buckets.ts). `p` is always the search parameter code. Components inside the string entries are
 * escaped with `escapeComponent` (`\` and `|` are backslash-escaped), so splits are unambiguous.
 * A parameter whose values are another's entries (`Observation.patient`, `combo-code`: stored-params.ts)
 * has no entries of its own here, only its `has` marker and sort key.
 *
 * - `tok`: token values. `${p}|${code}` (code only, any system: `code=x`) and `${p}|${system}|${code}`
 *   (system possibly empty: `code=s|x`, `code=|x`, `code=s|` via anchored prefix). Codings, Identifier
 *   (system|value), ContactPoint (system|value), code/boolean/string primitives (code only).
 *   `${p}:identifier|…` holds Reference.identifier for the `:identifier` modifier.
 * - `str`: `${p}|${normalized}` (lower-case, accent-free, whitespace collapsed; default and `:contains`
 *   search), `${p}:exact|${raw}` (`:exact`), and `${p}:text|${normalized}` for a token's
 *   CodeableConcept.text / Coding.display (`:text`).
 * - `ref`: `${p}|${Type}/${id}` (history suffix dropped), absolute URLs and canonicals as written
 *   (a versioned canonical `url|v` is stored with and without its version). Contained `#x` skipped.
 *   `*patient|Patient/x` once for each Patient whose compartment the resource is in (one of its type's
 *   compartment parameters references it: patient-compartment-key.ts).
 * - `uri`: `${p}|${uri}`.
 * - `dtl` / `dth`: `${p}|${lo ISO}` / `${p}|${hi ISO}`: the low and high end of the instant range a
 *   date/dateTime/instant/Period/Timing covers at its precision (open Period ends: years 0001/9999).
 *   ISO-8601 UTC strings of fixed width sort like the instants, so the exact range test is an
 *   anchored regex over one element (range-regex.ts), applied to the candidates `bkt` selects.
 * - `num`: `${p}|${sortableNumber(v)}`.
 * - `qty`: `${p}=${sortableNumber(v)}` (any unit), `${p}|${system}|${code}|${n}` and
 *   `${p}||${code or unit}|${n}` (unit-qualified searches `v|s|c`, `v||c`).
 * - `bkt`: range buckets (range-buckets.ts), the indexed side of date, number and quantity
 *   searches: prefixes of each encoded value at a few lengths, `${p}|${prefix}` for dates (low and
 *   high ends alike) and numbers, `${p}=${prefix}` for quantities (any unit). A range search is an
 *   `$in` of the prefixes that cover it, then the exact regex on `dtl`/`dth`/`num`/`qty`.
 * - `txt`: `_content` words (lower-case, accent-free, ≥ 2 chars, deduplicated, at most 500).
 * - `has`: codes of the parameters that have at least one value (`:missing`).
 * - `srt`: one sort key per parameter (`_sort`): date → earliest lo, string → normalized, number and
 *   quantity → first value, token → first code. Not indexed: it orders an already filtered set.
 */
export interface SearchIndex {
  tok?: string[];
  str?: string[];
  ref?: string[];
  uri?: string[];
  dtl?: string[];
  dth?: string[];
  num?: string[];
  qty?: string[];
  bkt?: string[];
  txt?: string[];
  has?: string[];
  srt?: Record<string, string | number | Date>;
}
