import { OperationOutcomeError } from '@app/fhir';

export interface PagingRule {
  fallback: number;
  min?: number;
  max: number;
  /** Over `max`: `clamp` for a page size (a hint, RFC-style), `refuse` for a position (400 too-costly). */
  overMax: 'clamp' | 'refuse';
}

/**
 * The one reading of paging parameters on every route (`offset`, `limit`, `_count`, `_skip`,
 * `_offset`): decimal digits only — no sign, space, fraction or exponent — within the rule's
 * range. A JSON body may carry a number; a repeated query parameter is refused. Errors are
 * OperationOutcomeErrors: an OperationOutcome on FHIR routes, `{ error, message }` elsewhere.
 */
export function pagingParameter(name: string, raw: unknown, rule: PagingRule): number {
  const min = rule.min ?? 0;
  if (raw === undefined || raw === '') return rule.fallback;
  if (Array.isArray(raw)) throw OperationOutcomeError.invalid(`${name} may be given once`, name);
  const text = typeof raw === 'number' ? String(raw) : typeof raw === 'string' ? raw : undefined;
  if (text === undefined || !/^\d{1,9}$/.test(text) || Number(text) < min) {
    const shown = text === undefined ? typeof raw : `"${text.slice(0, 40)}"`;
    const range = min === 0 ? 'a non-negative integer' : `an integer from ${min} to ${rule.max}`;
    throw OperationOutcomeError.invalid(`${name} must be ${range} (got ${shown})`, name);
  }
  const value = Number(text);
  if (value <= rule.max) return value;
  if (rule.overMax === 'clamp') return rule.max;
  throw new OperationOutcomeError('too-costly', `${name} must be at most ${rule.max}`, { status: 400 });
}
