/**
 * FHIR date/dateTime/instant values → the closed interval [lo, hi] they denote at their precision
 * (https://hl7.org/fhir/R4/search.html#date: "2020" means the whole year 2020). Values without a
 * time-zone offset are read as UTC (the spec leaves the zone of such values to the server).
 */

export interface DateRange {
  lo: Date;
  hi: Date;
}

const FHIR_DATE_TIME =
  /^(\d{4})(?:-(\d{2})(?:-(\d{2})(?:T(\d{2}):(\d{2})(?::(\d{2})(?:\.(\d+))?)?(Z|[+-]\d{2}:\d{2})?)?)?)?$/;

function daysInMonth(year: number, month: number): number {
  return new Date(Date.UTC(year, month, 0)).getUTCDate();
}

function utc(year: number, month: number, day: number, hour = 0, minute = 0, second = 0, ms = 0): number {
  const time = new Date(0);
  time.setUTCFullYear(year, month - 1, day);
  time.setUTCHours(hour, minute, second, ms);
  return time.getTime();
}

function offsetMillis(zone: string | undefined): number {
  if (!zone || zone === 'Z') return 0;
  const sign = zone.startsWith('-') ? -1 : 1;
  const hours = Number(zone.slice(1, 3));
  const minutes = Number(zone.slice(4, 6));
  return sign * (hours * 60 + minutes) * 60_000;
}

/** Bounds used for open Period ends: BSON-safe and sortable. */
export const MIN_DATE = new Date(utc(1, 1, 1));
export const MAX_DATE = new Date(utc(9999, 12, 31, 23, 59, 59, 999));

/** A time followed by a space and `hh:mm`: the space can only be a time-zone offset's `+`. */
const SPACE_FOR_PLUS = /^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?) (\d{2}:\d{2})$/;

/**
 * A `+` sent unescaped in a query string arrives as a space (`application/x-www-form-urlencoded`
 * decoding): HAPI's client sends `_since=2024-01-01T00:00:00+00:00` so. Where a space can only be
 * the `+` of a time-zone offset, it is read as one; any other text is returned as it is.
 */
export function plusForSpace(text: string): string {
  const match = SPACE_FOR_PLUS.exec(text.trim());
  return match ? `${match[1]}+${match[2]}` : text;
}

/** Parses a FHIR date, dateTime or instant; returns undefined when the text is not one. */
export function parseFhirDateRange(text: string): DateRange | undefined {
  const match = FHIR_DATE_TIME.exec(plusForSpace(text).trim());
  if (!match) return undefined;
  const [, y, mo, d, h, mi, s, fraction, zone] = match;
  const year = Number(y);
  const month = mo === undefined ? undefined : Number(mo);
  const day = d === undefined ? undefined : Number(d);
  if (month !== undefined && (month < 1 || month > 12)) return undefined;
  if (day !== undefined && (day < 1 || day > daysInMonth(year, month ?? 1))) return undefined;
  if (month === undefined) return { lo: new Date(utc(year, 1, 1)), hi: new Date(utc(year + 1, 1, 1) - 1) };
  if (day === undefined) {
    return { lo: new Date(utc(year, month, 1)), hi: new Date(utc(year, month + 1, 1) - 1) };
  }
  if (h === undefined)
    return { lo: new Date(utc(year, month, day)), hi: new Date(utc(year, month, day + 1) - 1) };
  const hour = Number(h);
  const minute = Number(mi);
  const second = s === undefined ? undefined : Math.min(Number(s), 59);
  if (hour > 23 || minute > 59) return undefined;
  const shift = offsetMillis(zone);
  const start = utc(year, month, day, hour, minute, second ?? 0) - shift;
  if (second === undefined) return { lo: new Date(start), hi: new Date(start + 60_000 - 1) };
  if (fraction === undefined) return { lo: new Date(start), hi: new Date(start + 999) };
  // Precision finer than milliseconds is truncated (BSON dates hold milliseconds).
  const digits = fraction.slice(0, 3);
  const unit = 10 ** (3 - digits.length);
  const lo = start + Number(digits) * unit;
  return { lo: new Date(lo), hi: new Date(lo + unit - 1) };
}
