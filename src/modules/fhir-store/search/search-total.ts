import type { ParsedSearch } from '@app/fhir';

/**
 * How a search counts its matches for `Bundle.total` (https://hl7.org/fhir/R4/search.html#total,
 * docs/api.md "Totals"): `_total=none` counts nothing; `_total=accurate` counts every match;
 * `_total=estimate` and no `_total` count at most `exactUpTo` + 1 matches, a count that stops there
 * (on an engine that reads its index lazily, a few ms however many match), and tell the total only
 * when it is exact. Above the cap no total is told, as HAPI leaves it out of large result sets: a
 * lower bound in `Bundle.total` would read as the exact number of matches.
 */
export type TotalCount = { readonly count: false } | { readonly count: true; readonly limit?: number };

export function totalCount(mode: ParsedSearch['total'], exactUpTo: number): TotalCount {
  if (mode === 'none') return { count: false };
  if (mode === 'accurate') return { count: true };
  return { count: true, limit: exactUpTo + 1 };
}

/** `Bundle.total` from what a count of `plan` answered: undefined when the count reached its cap. */
export function totalOf(counted: number, plan: TotalCount): number | undefined {
  if (!plan.count) return undefined;
  return plan.limit !== undefined && counted >= plan.limit ? undefined : counted;
}
