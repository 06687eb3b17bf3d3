import { FhirVersion, isResourceType, OperationOutcomeError, plusForSpace } from '@app/fhir';

/** Parsed kick-off parameters (https://hl7.org/fhir/uv/bulkdata/export.html#query-parameters). */
export interface ExportParameters {
  /** Requested types, deduplicated in request order; null = every type that has data. */
  types: string[] | null;
  /** Only resources whose meta.lastUpdated is later than this. */
  since: Date | null;
  /** `patient` (Patient/Group exports): patient ids, or null. */
  patients: string[] | null;
}

export type RawQuery = Record<string, string | string[] | undefined>;

const OUTPUT_FORMATS = new Set(['application/fhir+ndjson', 'application/ndjson', 'ndjson']);
/** Parameters of the IG this server does not implement: rejected unless `Prefer: handling=lenient`. */
const UNSUPPORTED = ['_typeFilter', '_elements', 'includeAssociatedData'];
/** At most this many `patient` values (they travel in every file link). */
const MAX_PATIENTS = 100;
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
 * `_since` as a date (`YYYY-MM-DD`, docs/api.md §10: start of that day, UTC) or a full FHIR instant
 * (the Bulk Data IG's form). Anything else, including impossible dates, is a 400.
 */
export function parseSince(sent: string): Date {
  // an unescaped `+` of the offset arrives as a space
  const raw = plusForSpace(sent);
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
    patients: parsePatients(query.patient),
  };
}

/** `patient=Patient/1` (repeatable; a comma list too) → the ids; anything but Patient references → 400. */
function parsePatients(raw: string | string[] | undefined): string[] | null {
  if (raw === undefined) return null;
  const values = (Array.isArray(raw) ? raw : [raw]).flatMap((v) => v.split(',')).map((v) => v.trim());
  const ids = values.map((value) => {
    const match = /^(?:.*\/)?Patient\/([A-Za-z0-9\-.]{1,64})$/.exec(value);
    if (!match)
      throw OperationOutcomeError.invalid(`patient "${value}" is not a Patient reference`, 'patient');
    return match[1];
  });
  if (ids.length > MAX_PATIENTS)
    throw OperationOutcomeError.invalid(`patient may name at most ${MAX_PATIENTS} patients`, 'patient');
  return [...new Set(ids)];
}

/**
 * The body of a POST kick-off (https://hl7.org/fhir/uv/bulkdata/export.html#post-body): a
 * Parameters resource → the same parameters as a GET query (`_type` repeated joins, `patient`
 * references).
 */
export function parametersToQuery(body: unknown): RawQuery {
  if (body === undefined || body === null || (typeof body === 'object' && Object.keys(body).length === 0))
    return {};
  const params = body as { resourceType?: unknown; parameter?: unknown };
  if (
    params.resourceType !== 'Parameters' ||
    (params.parameter !== undefined && !Array.isArray(params.parameter))
  ) {
    throw OperationOutcomeError.invalid('a POST $export body is a Parameters resource');
  }
  const query: Record<string, string[]> = {};
  for (const entry of (params.parameter ?? []) as Array<Record<string, unknown>>) {
    const name = typeof entry.name === 'string' ? entry.name : '';
    const valueKey = Object.keys(entry).find((k) => k.startsWith('value'));
    const value = valueKey ? entry[valueKey] : undefined;
    const text =
      typeof value === 'string'
        ? value
        : value &&
            typeof value === 'object' &&
            typeof (value as { reference?: unknown }).reference === 'string'
          ? (value as { reference: string }).reference
          : undefined;
    if (!name || text === undefined) {
      throw OperationOutcomeError.invalid(`Parameters.parameter "${name}" has no usable value`);
    }
    (query[name] ??= []).push(text);
  }
  return Object.fromEntries(
    Object.entries(query).map(([name, values]) => [name, values.length === 1 ? values[0] : values]),
  );
}
