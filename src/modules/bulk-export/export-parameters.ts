import { FhirVersion, isResourceType, OperationOutcomeError } from '@app/fhir';

/** Parsed kick-off parameters (https://hl7.org/fhir/uv/bulkdata/export.html#query-parameters). */
export interface ExportParameters {
  /** Requested types, deduplicated in request order; null = every type that has data. */
  types: string[] | null;
  /** Only resources whose meta.lastUpdated is later than this. */
  since: Date | null;
}

export type RawQuery = Record<string, string | string[] | undefined>;

const OUTPUT_FORMATS = new Set(['application/fhir+ndjson', 'application/ndjson', 'ndjson']);
/** Parameters of the IG this server does not implement: rejected unless `Prefer: handling=lenient`. */
const UNSUPPORTED = ['_typeFilter', '_elements', 'patient', 'includeAssociatedData'];
const DATE = /^(\d{4})-(\d{2})-(\d{2})$/;
const INSTANT = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(\.\d{1,9})?(Z|[+-](\d{2}):(\d{2}))$/;

function single(query: RawQuery, name: string): string | undefined {
  const value = query[name];
  if (Array.isArray(value)) {
    if (name === '_type') return value.join(',');
    throw OperationOutcomeError.invalid(`${name} may be given only once`, name);
  }
  return value;
}

function validCalendarDate(y: number, m: number, d: number): boolean {
  const date = new Date(Date.UTC(y, m - 1, d));
  return date.getUTCFullYear() === y && date.getUTCMonth() === m - 1 && date.getUTCDate() === d;
}

/**
 * `_since` as a date (`YYYY-MM-DD`, SPEC §4.8: start of that day, UTC) or a full FHIR instant
 * (the Bulk Data IG's form). Anything else, including impossible dates, is a 400.
 */
export function parseSince(raw: string): Date {
  const date = DATE.exec(raw);
  const instant = date ? undefined : INSTANT.exec(raw);
  const parts = date ?? instant;
  const bad = () =>
    OperationOutcomeError.invalid(
      `_since must be a date (YYYY-MM-DD) or an instant (YYYY-MM-DDThh:mm:ss[.sss]Z or ±hh:mm); got "${raw}"`,
      '_since',
    );
  if (!parts) throw bad();
  const [y, m, d] = [Number(parts[1]), Number(parts[2]), Number(parts[3])];
  if (!validCalendarDate(y, m, d)) throw bad();
  if (instant) {
    const [hh, mm, ss] = [Number(instant[4]), Number(instant[5]), Number(instant[6])];
    const offsetOk = instant[8] === 'Z' || (Number(instant[9]) <= 14 && Number(instant[10]) <= 59);
    if (hh > 23 || mm > 59 || ss > 59 || !offsetOk) throw bad();
    return new Date(raw);
  }
  return new Date(Date.UTC(y, m - 1, d));
}

/** `_type`: comma list; every unknown name is reported at once and nothing is exported. */
export function parseTypes(version: FhirVersion, raw: string): string[] {
  const names = raw
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  if (names.length === 0)
    throw OperationOutcomeError.invalid('_type must name at least one resource type', '_type');
  const unknown = names.filter((name) => !isResourceType(version, name));
  if (unknown.length > 0) {
    throw OperationOutcomeError.invalid(
      `_type names resource types unknown to FHIR ${version.toUpperCase()}: ${unknown.join(', ')}`,
      '_type',
    );
  }
  return [...new Set(names)];
}

export function parseExportParameters(
  version: FhirVersion,
  query: RawQuery,
  lenient = false,
): ExportParameters {
  const format = single(query, '_outputFormat');
  if (format !== undefined && !OUTPUT_FORMATS.has(format)) {
    throw OperationOutcomeError.invalid(
      `_outputFormat "${format}" is not supported; use application/fhir+ndjson`,
      '_outputFormat',
    );
  }
  if (!lenient) {
    const unsupported = UNSUPPORTED.filter((name) => query[name] !== undefined);
    if (unsupported.length > 0) {
      throw new OperationOutcomeError(
        'not-supported',
        `export parameter(s) not supported: ${unsupported.join(', ')} (send Prefer: handling=lenient to ignore)`,
        { status: 400 },
      );
    }
  }
  const type = single(query, '_type');
  const since = single(query, '_since');
  return {
    types: type === undefined ? null : parseTypes(version, type),
    since: since === undefined ? null : parseSince(since),
  };
}
