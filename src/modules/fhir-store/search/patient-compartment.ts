import { OperationOutcomeError, parseFhirDateRange, resourceTypes, type FhirVersion } from '@app/fhir';

export interface EverythingWindow {
  count: number;
  skip: number;
  types?: string[];
  since?: Date;
  start?: Date;
  end?: Date;
  /** `_total` (search.html#total): whether to count the whole result when no page reaches its end. */
  total?: EverythingTotal;
  /** Parameters this operation does not know (reported, not fatal). */
  unknown: string[];
}

const IGNORED = new Set(['_format', '_pretty']);

const TOTAL_MODES = ['none', 'estimate', 'accurate'] as const;
export type EverythingTotal = (typeof TOTAL_MODES)[number];

function wholeNumber(name: string, value: string, max: number, clamp: boolean): number {
  if (!/^\d{1,9}$/.test(value))
    throw OperationOutcomeError.invalid(`${name} must be a whole number, not '${value}'`);
  const number = Number(value);
  if (number <= max) return number;
  if (clamp) return max;
  throw new OperationOutcomeError('too-costly', `${name} may be at most ${max}`, { status: 400 });
}

function date(name: string, value: string): { lo: Date; hi: Date } {
  const range = parseFhirDateRange(value);
  if (!range) throw OperationOutcomeError.invalid(`${name} must be a FHIR date or dateTime, not '${value}'`);
  return range;
}

/** `$everything` parameters (https://hl7.org/fhir/R4/patient-operation-everything.html). */
export function parseEverythingParams(
  version: FhirVersion,
  pairs: ReadonlyArray<[string, string]>,
  limits: { defaultCount: number; maxCount: number; maxSkip: number },
): EverythingWindow {
  const window: EverythingWindow = { count: limits.defaultCount, skip: 0, unknown: [] };
  const known = new Set(resourceTypes(version));
  for (const [name, value] of pairs) {
    switch (name) {
      case '_count':
        window.count = wholeNumber('_count', value, limits.maxCount, true);
        break;
      case '_skip':
        window.skip = wholeNumber('_skip', value, limits.maxSkip, false);
        break;
      case '_type': {
        const types = value.split(',').map((type) => type.trim());
        const unknownType = types.find((type) => !known.has(type));
        if (unknownType !== undefined)
          throw OperationOutcomeError.invalid(`unknown resource type '${unknownType}' in _type`);
        window.types = [...(window.types ?? []), ...types];
        break;
      }
      case '_since':
        window.since = date('_since', value).lo;
        break;
      case 'start':
        window.start = date('start', value).lo;
        break;
      case 'end':
        window.end = date('end', value).hi;
        break;
      case '_total':
        if (!(TOTAL_MODES as readonly string[]).includes(value))
          throw OperationOutcomeError.invalid(
            `_total must be one of ${TOTAL_MODES.join(', ')}, not '${value}'`,
          );
        window.total = value as EverythingTotal;
        break;
      default:
        if (!IGNORED.has(name)) window.unknown.push(name);
    }
  }
  // an empty care period would answer only the resources without care dates: a mistake to report
  if (window.start && window.end && window.start > window.end)
    throw OperationOutcomeError.invalid(
      `start (${window.start.toISOString()}) is after end (${window.end.toISOString()})`,
    );
  return window;
}
