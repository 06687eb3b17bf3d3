/**
 * Range tests on fixed-width sortable strings (ISO-8601 instants, `sortableNumber` hex) written as
 * one anchored regex per array element: the exact test that both bounds hold for the same element
 * of the same parameter, applied to the candidates the range buckets select (range-buckets.ts).
 * `{$gte, $lt}` on an array may be satisfied by two different elements (MongoDB semantics), and
 * `$elemMatch: {$gte, $lt}`, though exact, is not a bounded index scan on DocumentDB.
 */

const HEX = '0123456789abcdef';

export interface RangeBound {
  value: string;
  inclusive: boolean;
}

function charsBetween(from: string, to: string, alphabet: string): string {
  // Characters strictly between `from` and `to` ('' and '\uffff' for open ends).
  return [...alphabet].filter((ch) => ch > from && ch < to).join('');
}

function classOf(chars: string): string {
  return chars.length === 1 ? chars : `[${chars}]`;
}

function any(count: number): string {
  return count === 0 ? '' : `.{${count}}`;
}

/** Alternatives (each matching exactly value.length chars) for strings ≥ (or >) value. */
function atLeast(value: string, inclusive: boolean, alphabet: string): string[] {
  const alternatives: string[] = [];
  for (let i = 0; i < value.length; i++) {
    if (!alphabet.includes(value[i])) continue; // a fixed separator of the format
    const higher = charsBetween(value[i], '\uffff', alphabet);
    if (higher) alternatives.push(value.slice(0, i) + classOf(higher) + any(value.length - i - 1));
  }
  if (inclusive) alternatives.push(value);
  return alternatives;
}

/** Alternatives for strings ≤ (or <) value. */
function atMost(value: string, inclusive: boolean, alphabet: string): string[] {
  const alternatives: string[] = [];
  for (let i = 0; i < value.length; i++) {
    if (!alphabet.includes(value[i])) continue;
    const lower = charsBetween('', value[i], alphabet);
    if (lower) alternatives.push(value.slice(0, i) + classOf(lower) + any(value.length - i - 1));
  }
  if (inclusive) alternatives.push(value);
  return alternatives;
}

function between(lower: RangeBound, upper: RangeBound, alphabet: string): string[] {
  const a = lower.value;
  const b = upper.value;
  if (a > b || (a === b && !(lower.inclusive && upper.inclusive))) return [];
  let k = 0;
  while (k < a.length && a[k] === b[k]) k++;
  if (k === a.length) return [a];
  const common = a.slice(0, k);
  const tailLength = a.length - k - 1;
  const alternatives = [
    ...atLeast(a.slice(k + 1), lower.inclusive, alphabet).map((rest) => common + a[k] + rest),
    ...atMost(b.slice(k + 1), upper.inclusive, alphabet).map((rest) => common + b[k] + rest),
  ];
  const middle = charsBetween(a[k], b[k], alphabet);
  if (middle) alternatives.push(common + classOf(middle) + any(tailLength));
  return alternatives;
}

/**
 * A `$regex` pattern matching `${keyPrefixPattern}${x}` exactly, for fixed-width x within the bounds.
 * `keyPrefixPattern` must already be regex-escaped. Returns a never-matching pattern for an empty range.
 */
export function rangePattern(
  keyPrefixPattern: string,
  lower: RangeBound | undefined,
  upper: RangeBound | undefined,
  width: number,
  alphabet: 'hex' | 'digits',
): string {
  const chars = alphabet === 'hex' ? HEX : HEX.slice(0, 10);
  let alternatives: string[];
  if (lower && upper) alternatives = between(lower, upper, chars);
  else if (lower) alternatives = atLeast(lower.value, lower.inclusive, chars);
  else if (upper) alternatives = atMost(upper.value, upper.inclusive, chars);
  else alternatives = [any(width)];
  if (alternatives.length === 0) return '^(?!)';
  return `^${keyPrefixPattern}(?:${alternatives.map(escapeLiteralParts).join('|')})$`;
}

/** ISO strings contain '.' (milliseconds): escape it; classes and `.{n}` were built by us. */
function escapeLiteralParts(alternative: string): string {
  return alternative.replace(/(\.)(?!\{)/g, '\\.').replace(/\+/g, '\\+');
}
