import { MAX_DATE, MIN_DATE, parseFhirDateRange } from './fhir-date-range';
import { bucketsOf, DATE_BUCKETS, NUMBER_BUCKETS, type BucketLayout } from './range-buckets';
import type { SearchIndex } from './search-index';
import type { CompiledExpression, CompiledSearchParam } from './search-parameter-types';
import {
  escapeComponent,
  MAX_INDEXED_STRING_LENGTH,
  normalizeText,
  sortableNumber,
} from './text-normalization';

type Json = Record<string, unknown>;

const HUMAN_NAME_AND_ADDRESS_PARTS = [
  'family',
  'given',
  'prefix',
  'suffix',
  'text',
  'line',
  'city',
  'district',
  'state',
  'postalCode',
  'country',
] as const;

function isObject(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function asString(value: unknown): string | undefined {
  return typeof value === 'string' && value.length > 0 ? value : undefined;
}

function stringsOf(value: unknown): string[] {
  if (typeof value === 'string') return [value];
  return Array.isArray(value) ? value.filter((item): item is string => typeof item === 'string') : [];
}

/** fhirpath.js wraps decimals and date-times in FP_* objects (class instances with toJSON). */
function plainValue(value: unknown): unknown {
  if (
    isObject(value) &&
    Object.getPrototypeOf(value) !== Object.prototype &&
    typeof value.toJSON === 'function'
  ) {
    return (value.toJSON as () => unknown)();
  }
  return value;
}

/** fhirpath ResourceNode → its JSON value and FHIR data type (plain values pass through). */
export function unwrapNode(node: unknown): { value: unknown; dataType?: string } {
  if (isObject(node) && 'data' in node && 'path' in node) {
    const dataType = node.fhirNodeDataType;
    return { value: plainValue(node.data), dataType: typeof dataType === 'string' ? dataType : undefined };
  }
  return { value: plainValue(node) };
}

const RELATIVE_REFERENCE = /^([A-Z][A-Za-z]+)\/([A-Za-z0-9\-.]{1,64})(?:\/_history\/[^/]+)?$/;

/**
 * `Type/id` (no version): the form in which a reference to this server's own base is stored and
 * searched (a search value `{base}/{version}/Type/id` is made this; one with a version stays as written).
 */
export const LOCAL_REFERENCE = /^[A-Z][A-Za-z]+\/[A-Za-z0-9\-.]{1,64}$/;

/** Accumulates the index entries of one resource; sets deduplicate as values arrive. */
export class IndexBuilder {
  private readonly tok = new Set<string>();
  private readonly str = new Set<string>();
  private readonly ref = new Set<string>();
  private readonly uri = new Set<string>();
  private readonly has = new Set<string>();
  private readonly dtl = new Set<string>();
  private readonly dth = new Set<string>();
  private readonly num = new Set<string>();
  private readonly qty = new Set<string>();
  private readonly bkt = new Set<string>();
  private readonly srt: Record<string, string | number | Date> = {};

  /** `localPrefix`: `{this server's base}/{version}/`, whose references are stored relative. */
  constructor(private readonly localPrefix?: string) {}

  /** `reference` without this server's prefix when what follows is `Type/id`; else as written. */
  private local(reference: string): string {
    const prefix = this.localPrefix;
    if (prefix === undefined || !reference.startsWith(prefix)) return reference;
    const relative = reference.slice(prefix.length);
    return LOCAL_REFERENCE.test(relative) ? relative : reference;
  }

  /** Converts the values one expression produced, according to the parameter's type. */
  add(param: CompiledSearchParam, expression: CompiledExpression, nodes: readonly unknown[]): void {
    for (const node of nodes) {
      const { value, dataType } = unwrapNode(node);
      if (value === undefined || value === null) continue;
      switch (param.type) {
        case 'token':
          this.addToken(param.code, value, dataType);
          break;
        case 'string':
          this.addStringValue(param.code, value);
          break;
        case 'reference':
          this.addReference(param, expression, value);
          break;
        case 'date':
          this.addDate(param.code, value);
          break;
        case 'number':
          if (typeof value === 'number' && Number.isFinite(value)) this.addNumber(param.code, value);
          break;
        case 'quantity':
          this.addQuantity(param.code, value);
          break;
        case 'uri':
          if (typeof value === 'string') this.addUri(param.code, value);
          break;
        case 'composite':
        case 'special':
          break;
      }
    }
  }

  private sortKey(code: string, key: string | number | Date): void {
    if (!(code in this.srt)) this.srt[code] = key;
  }

  private addToken(code: string, value: unknown, dataType: string | undefined): void {
    if (typeof value === 'boolean' || typeof value === 'number')
      return this.addCode(code, undefined, String(value));
    if (typeof value === 'string') return this.addCode(code, undefined, value);
    if (!isObject(value)) return;
    if (Array.isArray(value.coding) || dataType === 'CodeableConcept') {
      for (const coding of Array.isArray(value.coding) ? value.coding : []) this.addCoding(code, coding);
      this.addTokenText(code, value.text);
    } else if (dataType === 'Coding' || (dataType === undefined && 'code' in value)) {
      this.addCoding(code, value);
    } else if ('value' in value && typeof value.value === 'string') {
      // Identifier (system is a URI) or ContactPoint (system is phone/email …): both `system|value`.
      this.addCode(code, asString(value.system) ?? '', value.value);
    }
  }

  private addCoding(code: string, coding: unknown): void {
    if (!isObject(coding)) return;
    const value = asString(coding.code);
    if (value) this.addCode(code, asString(coding.system) ?? '', value);
    this.addTokenText(code, coding.display);
  }

  /** `system` undefined: a primitive code with no system of its own (stored code-only). */
  private addCode(code: string, system: string | undefined, value: string): void {
    const escaped = escapeComponent(value.slice(0, MAX_INDEXED_STRING_LENGTH));
    this.tok.add(`${code}|${escaped}`);
    if (system !== undefined) this.tok.add(`${code}|${escapeComponent(system)}|${escaped}`);
    this.has.add(code);
    this.sortKey(code, value);
  }

  private addTokenText(code: string, text: unknown): void {
    const normalized = typeof text === 'string' ? normalizeText(text) : '';
    if (normalized) this.str.add(`${code}:text|${normalized}`);
  }

  private addStringValue(code: string, value: unknown): void {
    if (typeof value === 'string') return this.addString(code, value);
    if (!isObject(value)) return;
    for (const part of HUMAN_NAME_AND_ADDRESS_PARTS) {
      for (const text of stringsOf(value[part])) this.addString(code, text);
    }
  }

  private addString(code: string, raw: string): void {
    const normalized = normalizeText(raw);
    if (!normalized) return;
    this.str.add(`${code}|${normalized}`);
    this.str.add(`${code}:exact|${raw.slice(0, MAX_INDEXED_STRING_LENGTH)}`);
    this.has.add(code);
    this.sortKey(code, normalized);
  }

  private addReference(param: CompiledSearchParam, expression: CompiledExpression, value: unknown): void {
    const code = param.code;
    if (typeof value === 'string') return this.addCanonical(code, this.local(value));
    if (!isObject(value)) return;
    if (isObject(value.identifier) && typeof value.identifier.value === 'string') {
      const system = asString(value.identifier.system) ?? '';
      const escapedValue = escapeComponent(value.identifier.value);
      this.tok.add(`${code}:identifier|${escapedValue}`);
      this.tok.add(`${code}:identifier|${escapeComponent(system)}|${escapedValue}`);
      this.has.add(code);
    }
    const written = asString(value.reference);
    if (!written || written.startsWith('#')) return;
    const reference = this.local(written);
    const relative = RELATIVE_REFERENCE.exec(reference);
    if (!relative) return this.addCanonical(code, reference);
    const type = relative[1];
    // `.where(resolve() is Patient)` and the parameter's target list select the referenced type.
    if (expression.targetType && expression.targetType !== type) return;
    if (param.targets.length > 0 && !param.targets.includes(type) && !param.targets.includes('Resource'))
      return;
    this.ref.add(`${code}|${type}/${relative[2]}`);
    this.has.add(code);
  }

  private addCanonical(code: string, url: string): void {
    this.ref.add(`${code}|${url}`);
    const versionBar = url.indexOf('|');
    if (versionBar > 0) this.ref.add(`${code}|${url.slice(0, versionBar)}`);
    this.has.add(code);
  }

  private addDate(code: string, value: unknown): void {
    if (typeof value === 'string') {
      const range = parseFhirDateRange(value);
      if (range) this.addDateRange(code, range.lo, range.hi);
      return;
    }
    if (!isObject(value)) return;
    if ('start' in value || 'end' in value) {
      const start = typeof value.start === 'string' ? parseFhirDateRange(value.start) : undefined;
      const end = typeof value.end === 'string' ? parseFhirDateRange(value.end) : undefined;
      if (start || end) this.addDateRange(code, start?.lo ?? MIN_DATE, end?.hi ?? MAX_DATE);
      return;
    }
    // Timing: each event, and the bounds of its repeat.
    for (const event of stringsOf(value.event)) this.addDate(code, event);
    if (isObject(value.repeat) && isObject(value.repeat.boundsPeriod))
      this.addDate(code, value.repeat.boundsPeriod);
  }

  /** Range buckets of one encoded value under `keyPrefix` (range-buckets.ts). */
  private addBuckets(keyPrefix: string, encoded: string, layout: BucketLayout): void {
    for (const bucket of bucketsOf(encoded, layout)) this.bkt.add(keyPrefix + bucket);
  }

  private addDateRange(code: string, lo: Date, hi: Date): void {
    const low = lo.toISOString();
    const high = hi.toISOString();
    this.dtl.add(`${code}|${low}`);
    this.dth.add(`${code}|${high}`);
    this.addBuckets(`${code}|`, low, DATE_BUCKETS);
    this.addBuckets(`${code}|`, high, DATE_BUCKETS);
    this.has.add(code);
    const current = this.srt[code];
    if (!(current instanceof Date) || lo < current) this.srt[code] = lo;
  }

  private addNumber(code: string, value: number): void {
    const encoded = sortableNumber(value);
    this.num.add(`${code}|${encoded}`);
    this.addBuckets(`${code}|`, encoded, NUMBER_BUCKETS);
    this.has.add(code);
    this.sortKey(code, value);
  }

  private addQuantity(code: string, value: unknown): void {
    const amount = typeof value === 'number' ? value : isObject(value) ? value.value : undefined;
    if (typeof amount !== 'number' || !Number.isFinite(amount)) return;
    const encoded = sortableNumber(amount);
    this.qty.add(`${code}=${encoded}`);
    // Unit-qualified searches take their candidates from the any-unit buckets too.
    this.addBuckets(`${code}=`, encoded, NUMBER_BUCKETS);
    if (isObject(value)) {
      const system = asString(value.system);
      const unitCode = asString(value.code) ?? asString(value.currency);
      const unit = asString(value.unit);
      if (unitCode) {
        this.qty.add(`${code}||${escapeComponent(unitCode)}|${encoded}`);
        if (system)
          this.qty.add(`${code}|${escapeComponent(system)}|${escapeComponent(unitCode)}|${encoded}`);
      }
      if (unit && unit !== unitCode) this.qty.add(`${code}||${escapeComponent(unit)}|${encoded}`);
    }
    this.has.add(code);
    this.sortKey(code, amount);
  }

  private addUri(code: string, value: string): void {
    this.uri.add(`${code}|${value}`);
    this.has.add(code);
  }

  /** The references collected so far (`param|target`): what the Patient compartment keys are made of. */
  references(): ReadonlySet<string> {
    return this.ref;
  }

  /**
   * Takes the `has` markers and sort keys of `other` (the derived parameters' builder,
   * stored-params.ts): their entries are another parameter's, their presence and order their own.
   */
  adoptPresenceAndSort(other: IndexBuilder): void {
    for (const code of other.has) this.has.add(code);
    for (const [code, key] of Object.entries(other.srt)) if (!(code in this.srt)) this.srt[code] = key;
  }

  /** The finished index: empty arrays are left out to keep documents small. */
  build(words: string[]): SearchIndex {
    const index: SearchIndex = {};
    if (this.tok.size) index.tok = [...this.tok];
    if (this.str.size) index.str = [...this.str];
    if (this.ref.size) index.ref = [...this.ref];
    if (this.uri.size) index.uri = [...this.uri];
    if (this.dtl.size) index.dtl = [...this.dtl];
    if (this.dth.size) index.dth = [...this.dth];
    if (this.num.size) index.num = [...this.num];
    if (this.qty.size) index.qty = [...this.qty];
    if (this.bkt.size) index.bkt = [...this.bkt];
    if (words.length) index.txt = words;
    if (this.has.size) index.has = [...this.has];
    if (Object.keys(this.srt).length) index.srt = this.srt;
    return index;
  }
}
