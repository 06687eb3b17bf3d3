import type { SearchClause, SearchPrefix, SearchValue } from '@app/fhir/search/parsed-search';
import { coveringBuckets, DATE_BUCKETS, NUMBER_BUCKETS } from '@app/fhir/search/range-buckets';
import { rangePattern } from './range-regex';
import { SearchError } from '@app/fhir/search/search-error';
import {
  escapeComponent,
  escapeRegex,
  MAX_INDEXED_STRING_LENGTH,
  normalizeText,
  sortableNumber,
} from '@app/fhir/search/text-normalization';

/**
 * One SearchClause → one MongoDB condition on the `idx` arrays (shape in search-index.ts).
 * Every condition an index can serve is an equality or `$in` on one `idx.*` array (plus prefix
 * regexes where no bounded form exists): the only multikey look-ups DocumentDB bounds (see
 * range-buckets.ts); MongoDB bounds them too. User input only ever lands in string or number
 * operands: field names come from the parameter definitions, and every regex operand is escaped.
 */

export type Filter = Record<string, unknown>;

const DAY = 86_400_000;

function anyOf(conditions: Filter[]): Filter {
  return conditions.length === 1 ? conditions[0] : { $or: conditions };
}

function regexFrom(prefixPattern: string): Filter {
  return { $regex: prefixPattern };
}

/** `^param\|` — anchored, so MongoDB scans only the index range of that parameter. */
function paramPrefix(param: string): string {
  return `^${escapeRegex(param)}\\|`;
}

function stringCondition(clause: SearchClause, value: SearchValue): Filter {
  if (value.kind !== 'string') throw new SearchError('invalid', `Invalid value for '${clause.param}'`);
  if (clause.modifier === 'exact') {
    return { 'idx.str': `${clause.param}:exact|${value.text.slice(0, MAX_INDEXED_STRING_LENGTH)}` };
  }
  const normalized = escapeRegex(normalizeText(value.text));
  if (clause.modifier === 'contains')
    return { 'idx.str': regexFrom(`${paramPrefix(clause.param)}.*${normalized}`) };
  // Default: starts-with, case- and accent-insensitive (search.html#string).
  return { 'idx.str': regexFrom(`${paramPrefix(clause.param)}${normalized}`) };
}

/** Exact token keys for one value, or a prefix pattern for `system|` (any code of a system). */
export function tokenKey(param: string, value: SearchValue): { key?: string; pattern?: string } {
  if (value.kind !== 'token') throw new SearchError('invalid', `Invalid token value for '${param}'`);
  if (value.system === undefined) return { key: `${param}|${escapeComponent(value.code ?? '')}` };
  if (value.code === undefined)
    return { pattern: `${paramPrefix(param)}${escapeRegex(escapeComponent(value.system))}\\|` };
  return { key: `${param}|${escapeComponent(value.system)}|${escapeComponent(value.code)}` };
}

function tokenCondition(clause: SearchClause, field: 'idx.tok', param: string): Filter {
  if (clause.modifier === 'text') {
    // :text matches the start of any word of CodeableConcept.text / Coding.display.
    return anyOf(
      clause.values.map((value) => {
        const text = value.kind === 'string' ? normalizeText(value.text) : '';
        return { 'idx.str': regexFrom(`^${escapeRegex(param)}:text\\|(.* )?${escapeRegex(text)}`) };
      }),
    );
  }
  const keys: string[] = [];
  const patterns: string[] = [];
  for (const value of clause.values) {
    const { key, pattern } = tokenKey(param, value);
    if (key !== undefined) keys.push(key);
    if (pattern !== undefined) patterns.push(pattern);
  }
  if (clause.modifier === 'not') {
    if (patterns.length > 0) throw new SearchError('not-supported', `':not' with 'system|' is not supported`);
    // :not also matches resources without any value for the parameter (search.html#modifiers).
    return { [field]: { $nin: keys } };
  }
  const conditions: Filter[] = patterns.map((pattern) => ({ [field]: regexFrom(pattern) }));
  if (keys.length > 0) conditions.unshift({ [field]: keys.length === 1 ? keys[0] : { $in: keys } });
  return anyOf(conditions);
}

/** Beyond this many target types a bare id is matched by one anchored regex instead of `$in`. */
const MAX_EXPANDED_TARGETS = 8;

/** Reference keys; a bare id expands to each concrete target type of the parameter. */
function referenceCondition(clause: SearchClause): Filter {
  const keys: string[] = [];
  const patterns: string[] = [];
  const concreteTargets = clause.targets.includes('Resource') ? [] : clause.targets;
  for (const value of clause.values) {
    if (value.kind !== 'reference')
      throw new SearchError('invalid', `Invalid reference for '${clause.param}'`);
    const reference = value.reference;
    if (reference.includes('/') || reference.includes(':')) {
      keys.push(`${clause.param}|${reference}`);
    } else if (concreteTargets.length > 0 && concreteTargets.length <= MAX_EXPANDED_TARGETS) {
      for (const target of concreteTargets) keys.push(`${clause.param}|${target}/${reference}`);
    } else {
      patterns.push(`${paramPrefix(clause.param)}[A-Za-z]+/${escapeRegex(reference)}$`);
    }
  }
  const conditions: Filter[] = patterns.map((pattern) => ({ 'idx.ref': regexFrom(pattern) }));
  if (keys.length > 0) conditions.unshift({ 'idx.ref': keys.length === 1 ? keys[0] : { $in: keys } });
  return anyOf(conditions);
}

function uriCondition(clause: SearchClause): Filter {
  const conditions: Filter[] = clause.values.map((value) => {
    if (value.kind !== 'uri') throw new SearchError('invalid', `Invalid uri for '${clause.param}'`);
    if (clause.modifier === 'below')
      return { 'idx.uri': regexFrom(`${paramPrefix(clause.param)}${escapeRegex(value.uri)}`) };
    if (clause.modifier === 'above') {
      // Every ancestor path of the value (cut at '/'), itself included.
      const ancestors: string[] = [];
      for (let end = value.uri.length; end > 0; end = value.uri.lastIndexOf('/', end - 1)) {
        const candidate = value.uri.slice(0, end);
        if (candidate.endsWith('/') || candidate.endsWith(':')) break;
        ancestors.push(`${clause.param}|${candidate}`);
      }
      return { 'idx.uri': { $in: ancestors } };
    }
    return { 'idx.uri': `${clause.param}|${value.uri}` };
  });
  return anyOf(conditions);
}

/**
 * `ap` (approximately): the value range widened by 10% of its distance from now, at least one day
 * (R4 leaves the margin to the server: search.html#prefix).
 */
function approximateDateRange(lo: Date, hi: Date, now: Date): { lo: Date; hi: Date } {
  const margin = Math.max(DAY, Math.abs(now.getTime() - lo.getTime()) * 0.1);
  return { lo: new Date(lo.getTime() - margin), hi: new Date(hi.getTime() + margin) };
}

/**
 * Whether a range condition carries its `idx.bkt` keys: 'bounded' when the search may run on the
 * bucket index (filter-builder.ts `indexFor`), 'unbounded' when it runs on another one.
 */
export type RangeBuckets = 'bounded' | 'unbounded';

type Lower = ['$gt' | '$gte', string];
type Upper = ['$lt' | '$lte', string];

const DATE_FIELDS = new Set(['idx.dtl', 'idx.dth']);

/**
 * Some element of `field` under one key prefix (`date|`, `value-quantity=` …) lies within the
 * bounds. Two parts: `idx.bkt` keys covering the bounds (an `$in`, which both engines answer with a
 * bounded index scan; `bucketPrefix` names the buckets, range-buckets.ts), and the exact test of
 * one element, a regex over the fixed-width encoded value (range-regex.ts), on the fetched
 * candidates. `$elemMatch: {$gte, $lt}` would be exact too, but DocumentDB reads the whole
 * tenant range of the index for it. The buckets only bound that index scan: every value the regex
 * accepts has one of its prefixes among them. A search that runs on another index (`buckets`
 * 'unbounded') tests the regex alone: DocumentDB tests each condition its index does not bound on
 * the whole stored document, so a redundant one costs a document decompression per candidate.
 */
function elementInRange(
  field: string,
  keyPrefix: string,
  lower: Lower | undefined,
  upper: Upper | undefined,
  buckets: RangeBuckets,
  bucketPrefix = keyPrefix,
): Filter {
  const isDate = DATE_FIELDS.has(field);
  const layout = isDate ? DATE_BUCKETS : NUMBER_BUCKETS;
  const pattern = rangePattern(
    escapeRegex(keyPrefix),
    lower && { value: lower[1], inclusive: lower[0] === '$gte' },
    upper && { value: upper[1], inclusive: upper[0] === '$lte' },
    isDate ? 24 : 16,
    isDate ? 'digits' : 'hex',
  );
  const exact = { [field]: { $regex: pattern } };
  if (buckets === 'unbounded') return exact;
  const covering = coveringBuckets(lower?.[1] ?? layout.floor, upper?.[1] ?? layout.ceiling, layout);
  return { $and: [{ 'idx.bkt': { $in: covering.map((bucket) => bucketPrefix + bucket) } }, exact] };
}

/**
 * Date prefixes on stored ranges [lo, hi] (search.html#date): `idx.dtl` holds the lows, `idx.dth`
 * the highs. eq/ap test both ends; for a parameter with several values they may come from
 * different values (documented approximation), exact for the usual single value.
 */
function dateRangeCondition(
  param: string,
  { prefix, lo, hi }: { prefix: SearchPrefix; lo: Date; hi: Date },
  now: Date,
  buckets: RangeBuckets,
): Filter {
  const key = `${param}|`;
  const low = lo.toISOString();
  const high = hi.toISOString();
  const within = (field: 'idx.dtl' | 'idx.dth', lower?: Lower, upper?: Upper): Filter =>
    elementInRange(field, key, lower, upper, buckets);
  switch (prefix) {
    case 'eq':
      return {
        $and: [
          within('idx.dtl', ['$gte', low], ['$lte', high]),
          within('idx.dth', ['$gte', low], ['$lte', high]),
        ],
      };
    case 'ne':
      return {
        $or: [within('idx.dtl', undefined, ['$lt', low]), within('idx.dth', ['$gt', high])],
      };
    case 'gt':
      return within('idx.dth', ['$gt', high]);
    case 'lt':
      return within('idx.dtl', undefined, ['$lt', low]);
    case 'ge':
      return within('idx.dth', ['$gte', low]);
    case 'le':
      return within('idx.dtl', undefined, ['$lte', high]);
    case 'sa':
      return within('idx.dtl', ['$gt', high]);
    case 'eb':
      return within('idx.dth', undefined, ['$lt', low]);
    case 'ap': {
      const wide = approximateDateRange(lo, hi, now);
      return {
        $and: [
          within('idx.dtl', undefined, ['$lte', wide.hi.toISOString()]),
          within('idx.dth', ['$gte', wide.lo.toISOString()]),
        ],
      };
    }
  }
}

function dateCondition(clause: SearchClause, now: Date, buckets: RangeBuckets): Filter {
  return anyOf(
    clause.values.map((value) => {
      if (value.kind !== 'date') throw new SearchError('invalid', `Invalid date for '${clause.param}'`);
      return dateRangeCondition(clause.param, value, now, buckets);
    }),
  );
}

/** `_lastUpdated` compares the single instant `lu` (a range whose lo and hi are equal). */
function instantCondition(prefix: SearchPrefix, lo: Date, hi: Date, now: Date): Filter {
  switch (prefix) {
    case 'eq':
      return { lu: { $gte: lo, $lte: hi } };
    case 'ne':
      return { $or: [{ lu: { $lt: lo } }, { lu: { $gt: hi } }] };
    case 'gt':
    case 'sa':
      return { lu: { $gt: hi } };
    case 'lt':
    case 'eb':
      return { lu: { $lt: lo } };
    case 'ge':
      return { lu: { $gte: lo } };
    case 'le':
      return { lu: { $lte: hi } };
    case 'ap': {
      const wide = approximateDateRange(lo, hi, now);
      return { lu: { $gte: wide.lo, $lte: wide.hi } };
    }
  }
}

function lastUpdatedCondition(clause: SearchClause, now: Date): Filter {
  return anyOf(
    clause.values.map((value) => {
      if (value.kind !== 'date') throw new SearchError('invalid', 'Invalid _lastUpdated value');
      return instantCondition(value.prefix, value.lo, value.hi, now);
    }),
  );
}

/** Number prefixes on stored point values (search.html#number: "100" means [99.5, 100.5)). */
function pointCondition(
  field: string,
  key: string,
  bucketPrefix: string,
  prefix: SearchPrefix,
  value: number,
  lo: number,
  hi: number,
  buckets: RangeBuckets,
): Filter {
  const n = sortableNumber;
  const within = (lower?: Lower, upper?: Upper): Filter =>
    elementInRange(field, key, lower, upper, buckets, bucketPrefix);
  switch (prefix) {
    case 'eq':
      return within(['$gte', n(lo)], ['$lt', n(hi)]);
    case 'ne':
      return {
        $or: [within(undefined, ['$lt', n(lo)]), within(['$gte', n(hi)])],
      };
    case 'gt':
    case 'sa':
      return within(['$gt', n(value)]);
    case 'lt':
    case 'eb':
      return within(undefined, ['$lt', n(value)]);
    case 'ge':
      return within(['$gte', n(value)]);
    case 'le':
      return within(undefined, ['$lte', n(value)]);
    case 'ap': {
      // ap: within 10% of the value (or its precision range, if wider).
      const margin = Math.abs(value) * 0.1;
      return within(['$gte', n(Math.min(lo, value - margin))], ['$lte', n(Math.max(hi, value + margin))]);
    }
  }
}

function numberCondition(clause: SearchClause, buckets: RangeBuckets): Filter {
  return anyOf(
    clause.values.map((value) => {
      if (value.kind === 'number') {
        const key = `${clause.param}|`;
        return pointCondition('idx.num', key, key, value.prefix, value.value, value.lo, value.hi, buckets);
      }
      if (value.kind === 'quantity') {
        // Keys of search-index.ts: `p=` any unit, `p|system|code|`, `p||code|` (code or unit, any system).
        const key =
          value.code === undefined
            ? `${clause.param}=`
            : `${clause.param}|${value.system === undefined ? '' : escapeComponent(value.system)}|${escapeComponent(value.code)}|`;
        const anyUnit = `${clause.param}=`;
        return pointCondition(
          'idx.qty',
          key,
          anyUnit,
          value.prefix,
          value.value,
          value.lo,
          value.hi,
          buckets,
        );
      }
      throw new SearchError('invalid', `Invalid number for '${clause.param}'`);
    }),
  );
}

function missingCondition(clause: SearchClause): Filter {
  return anyOf(
    clause.values.map((value) =>
      value.kind === 'missing' && value.missing
        ? { 'idx.has': { $ne: clause.param } }
        : { 'idx.has': clause.param },
    ),
  );
}

/**
 * The condition for one clause of the searched type (chains and _has are resolved elsewhere).
 * `buckets`: see RangeBuckets (date, number and quantity clauses).
 */
export function clauseCondition(clause: SearchClause, now: Date, buckets: RangeBuckets = 'bounded'): Filter {
  if (clause.modifier === 'missing') return missingCondition(clause);
  if (clause.param === '_id')
    return { id: { $in: clause.values.map((value) => (value.kind === 'token' ? value.code : '')) } };
  if (clause.param === '_lastUpdated') return lastUpdatedCondition(clause, now);
  switch (clause.type) {
    case 'string':
      return anyOf(clause.values.map((value) => stringCondition(clause, value)));
    case 'token':
      return tokenCondition(clause, 'idx.tok', clause.param);
    case 'reference':
      if (clause.modifier === 'identifier')
        return tokenCondition(clause, 'idx.tok', `${clause.param}:identifier`);
      return referenceCondition(clause);
    case 'date':
      return dateCondition(clause, now, buckets);
    case 'number':
    case 'quantity':
      return numberCondition(clause, buckets);
    case 'uri':
      return uriCondition(clause);
    case 'composite':
    case 'special':
      throw new SearchError('not-supported', `Search parameter '${clause.param}' is not supported`);
  }
}
