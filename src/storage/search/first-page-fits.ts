import type { ParsedSearch } from '@app/fhir';

/** Weight of the newest first page in a shape's rate (about the last ten count). */
const WEIGHT = 0.1;

/**
 * Rate of first pages that held every match above which a plain page is the better bet. The page
 * that counts costs the engine about 0.2 ms more than a plain one (0.8 against 0.6 ms for a
 * patient's few Conditions); a plain page that did not hold every match has a count query after
 * it (about 0.55 ms and a round trip). Plain wins while (1 - rate) × 0.55 < 0.2, i.e. above ≈ 0.64
 * (docs/storage.md "Totals").
 */
const FITS_RATE = 0.65;

/** Shapes remembered at most (oldest forgotten first): a few hundred bytes each. */
const MAX_SHAPES = 2048;

/**
 * Whether the first pages of a search shape have lately held all of their matches: then the
 * page alone tells the total, and counting beside it only adds work. Learned from every first
 * page of the shape, whichever query served it, so a shape whose matches grow is noticed. A shape
 * is one client's search of one type with the same parameters, sort and page size (its values
 * left out: one patient's Conditions predict another's). It decides only the shape of the query,
 * never the answer: both shapes give the same page and total.
 */
export class FirstPageFits {
  private readonly rates = new Map<string, number>();

  constructor(private readonly maxShapes = MAX_SHAPES) {}

  /** True when the shape's recent first pages held all their matches; unknown shapes: false. */
  likely(shape: string): boolean {
    return (this.rates.get(shape) ?? 0) >= FITS_RATE;
  }

  /** One first page of `shape`: whether it held all of its matches. */
  record(shape: string, fits: boolean): void {
    const before = this.rates.get(shape);
    if (before === undefined && this.rates.size >= this.maxShapes) {
      this.rates.delete(this.rates.keys().next().value!);
    }
    this.rates.set(shape, before === undefined ? Number(fits) : before + (Number(fits) - before) * WEIGHT);
  }
}

/**
 * The shape of a search (`FirstPageFits`): the client, the type, the parameters' names and
 * modifiers (chained and `_has` ones with their path), the sort and the page size.
 */
export function searchShape(clientId: string, parsed: ParsedSearch): string {
  const named = (clause: { param: string; modifier?: string }) => `${clause.param}:${clause.modifier ?? ''}`;
  const params = [
    ...parsed.clauses.map(named),
    ...parsed.chains.map((chain) => `${chain.referenceParam}.${named(chain.clause)}`),
    ...parsed.has.map((has) => `_has:${has.sourceType}:${has.referenceParam}:${named(has.clause)}`),
  ].sort();
  const sort = parsed.sort.map((key) => `${key.descending ? '-' : ''}${key.param}`);
  return JSON.stringify([clientId, parsed.version, parsed.type ?? '', params, sort, parsed.count]);
}
