import type { FhirVersion } from '../definitions/fhir-version';
import type { SearchParamType } from './search-parameter-types';

/** Comparison prefixes of number/date/quantity values (https://hl7.org/fhir/R4/search.html#prefix). */
export type SearchPrefix = 'eq' | 'ne' | 'gt' | 'lt' | 'ge' | 'le' | 'sa' | 'eb' | 'ap';

/** One parsed value; the values of one clause are OR-ed (comma-separated in the query). */
export type SearchValue =
  | { kind: 'string'; text: string }
  /** `system` undefined: any system; `''`: no system (`|code`); `code` undefined: any code (`system|`). */
  | { kind: 'token'; system?: string; code?: string }
  /** `Type/id`, a bare `id`, or an absolute URL / canonical. */
  | { kind: 'reference'; reference: string }
  | { kind: 'date'; prefix: SearchPrefix; lo: Date; hi: Date }
  /** `lo`/`hi`: the implicit precision range of the value ("100" → [99.5, 100.5)). */
  | { kind: 'number'; prefix: SearchPrefix; value: number; lo: number; hi: number }
  | {
      kind: 'quantity';
      prefix: SearchPrefix;
      value: number;
      lo: number;
      hi: number;
      system?: string;
      code?: string;
    }
  | { kind: 'uri'; uri: string }
  | { kind: 'missing'; missing: boolean };

export type SearchModifier =
  'exact' | 'contains' | 'text' | 'not' | 'missing' | 'below' | 'above' | 'identifier' | 'type';

/** One search parameter occurrence: its values are OR-ed; clauses of a search are AND-ed. */
export interface SearchClause {
  /** Parameter code; `_id` and `_lastUpdated` map to the top-level `id` / `lu` fields. */
  param: string;
  type: SearchParamType;
  modifier?: SearchModifier;
  /** For `:Type` on a reference parameter (`subject:Patient=1`). */
  modifierType?: string;
  /** Reference targets of the parameter (to expand a bare id into `Type/id`). */
  targets: readonly string[];
  values: SearchValue[];
}

/** `subject:Patient.name=x`: find the targets first, then match references to them. */
export interface ChainedClause {
  /** The reference parameter on the searched type. */
  referenceParam: string;
  /** Types the chained parameter is evaluated on. */
  targetTypes: string[];
  clause: SearchClause;
}

/** `_has:Observation:patient:code=x`: resources referenced by matching Observations. */
export interface HasClause {
  /** The type holding the reference (Observation). */
  sourceType: string;
  /** Its reference parameter pointing back to the searched type (patient). */
  referenceParam: string;
  clause: SearchClause;
}

/** `_include` / `_revinclude` (https://hl7.org/fhir/R4/search.html#include). */
export interface IncludeDirective {
  /** `*` as a whole value: every reference of every matched resource. */
  wildcard: boolean;
  sourceType?: string;
  /** Reference parameters of sourceType to follow (all reference params for `Type:*`). */
  params: string[];
  targetType?: string;
  iterate: boolean;
}

export interface SortKey {
  param: string;
  descending: boolean;
}

export interface ParsedSearch {
  version: FhirVersion;
  /** Resource type of a type-level search; undefined for a system search. */
  type?: string;
  /** `_type` of a system search. */
  types?: string[];
  clauses: SearchClause[];
  /** `_content`: each occurrence AND-ed, its comma-separated values OR-ed; each value a list of words. */
  content: string[][][];
  chains: ChainedClause[];
  has: HasClause[];
  count: number;
  skip: number;
  sort: SortKey[];
  total?: 'accurate' | 'none' | 'estimate';
  summary?: 'true' | 'false' | 'text' | 'data' | 'count';
  elements?: string[];
  include: IncludeDirective[];
  revinclude: IncludeDirective[];
  /** Parameters the server does not know (reported as an OperationOutcome warning unless strict). */
  unknown: string[];
}

export interface ParseSearchOptions {
  /** Unknown parameters raise a SearchError instead of being collected. */
  strict?: boolean;
  /** The caller asked for lenient handling (`Prefer: handling=lenient`): see `fullTextOff`. */
  lenient?: boolean;
  /**
   * Full-text search is off on this server, for the reason given (named in the error): `_content`
   * and `_text` raise a SearchError, or are collected as unknown under `lenient` handling.
   */
  fullTextOff?: string;
  /** Default page size (10, docs/api.md §13). */
  defaultCount?: number;
  /** Largest page size; larger `_count` values are clamped (100). */
  maxCount?: number;
  /** Deepest reachable result: `_skip + _count` beyond it is refused as too costly (10,000). */
  maxWindow?: number;
}
