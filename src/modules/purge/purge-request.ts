import { FhirVersion, isResourceType, OperationOutcomeError, parseFhirVersion } from '@app/fhir';

/**
 * The parameters of `DELETE /{v}/purge` (docs/api.md §9), checked before anything is touched: a purge
 * cannot be undone, so every doubtful input is a 400 rather than a guess.
 */
export const PURGE_MODES = ['delete', 'dry-run'] as const;
export type PurgeMode = (typeof PURGE_MODES)[number];

export interface PurgeRequest {
  version: FhirVersion;
  /** Resource types to purge, deduplicated; null = every type. */
  types: string[] | null;
  /** Only resources whose current meta.lastUpdated is strictly earlier; null = any time. */
  before: Date | null;
  mode: PurgeMode;
}

export type RawQuery = Record<string, string | string[] | undefined>;

const KNOWN_PARAMETERS = new Set(['_type', '_before', '_mode']);

// A calendar date, or an instant with seconds and a zone (https://hl7.org/fhir/R4/datatypes.html#instant).
const DATE_ONLY = /^(\d{4})-(\d{2})-(\d{2})$/;
const FULL_INSTANT =
  /^(\d{4})-(\d{2})-(\d{2})T([01]\d|2[0-3]):([0-5]\d):([0-5]\d|60)(\.\d{1,9})?(Z|[+-](?:0\d|1[0-4]):[0-5]\d)$/;

export function parsePurgeRequest(versionSegment: string, query: RawQuery): PurgeRequest {
  const version = parseFhirVersion(versionSegment);
  if (!version) {
    throw OperationOutcomeError.notFound(`unknown FHIR version "${versionSegment}"; use R4, STU3 or DSTU2`);
  }
  // A typo such as `_typ=Patient` must not widen a purge to everything of the user.
  const unknown = Object.keys(query).filter((name) => !KNOWN_PARAMETERS.has(name));
  if (unknown.length > 0) {
    throw OperationOutcomeError.invalid(
      `unknown purge parameter(s): ${unknown.join(', ')}; allowed: _type, _before, _mode`,
      unknown[0],
    );
  }
  const type = query._type;
  const before = singleValue(query, '_before');
  const mode = singleValue(query, '_mode');
  return {
    version,
    types: type === undefined ? null : parseTypeList(version, Array.isArray(type) ? type.join(',') : type),
    before: before === undefined ? null : parseBefore(before),
    mode: mode === undefined ? 'delete' : parseMode(mode),
  };
}

function singleValue(query: RawQuery, name: string): string | undefined {
  const value = query[name];
  if (Array.isArray(value)) throw OperationOutcomeError.invalid(`${name} may be given only once`, name);
  return value;
}

function parseTypeList(version: FhirVersion, raw: string): string[] {
  const names = [
    ...new Set(
      raw
        .split(',')
        .map((name) => name.trim())
        .filter((name) => name.length > 0),
    ),
  ];
  if (names.length === 0)
    throw OperationOutcomeError.invalid('_type is empty: name at least one resource type', '_type');
  const unknown = names.filter((name) => !isResourceType(version, name));
  if (unknown.length > 0) {
    throw OperationOutcomeError.invalid(
      `_type: unknown resource type(s) in FHIR ${version.toUpperCase()}: ${unknown.join(', ')}`,
      '_type',
    );
  }
  return names;
}

/** `YYYY-MM-DD` means the start of that day in UTC; an instant is taken as given. */
export function parseBefore(raw: string): Date {
  const invalid = OperationOutcomeError.invalid(
    `_before must be a date (YYYY-MM-DD) or an instant with a time zone (YYYY-MM-DDThh:mm:ss[.sss]Z); got "${raw}"`,
    '_before',
  );
  const dateOnly = DATE_ONLY.exec(raw);
  const parts = dateOnly ?? FULL_INSTANT.exec(raw);
  if (!parts) throw invalid;
  const [year, month, day] = [Number(parts[1]), Number(parts[2]), Number(parts[3])];
  const midnight = new Date(Date.UTC(year, month - 1, day));
  const realDay =
    year >= 1 &&
    midnight.getUTCFullYear() === year &&
    midnight.getUTCMonth() === month - 1 &&
    midnight.getUTCDate() === day;
  if (!realDay) throw invalid;
  if (dateOnly) return midnight;
  // A leap second (ss = 60) is valid FHIR; JavaScript dates cannot hold it.
  const instant = new Date(raw.replace(/:60(?=[.Z+-])(\.\d+)?/, ':59.999'));
  if (Number.isNaN(instant.getTime())) throw invalid;
  return instant;
}

function parseMode(raw: string): PurgeMode {
  const mode = PURGE_MODES.find((known) => known === raw);
  if (!mode) {
    throw OperationOutcomeError.invalid(
      `_mode must be one of ${PURGE_MODES.join(', ')}; got "${raw}"`,
      '_mode',
    );
  }
  return mode;
}
