import type { FhirVersion } from '../definitions/fhir-version';

/**
 * FHIR content negotiation: the service speaks JSON only. `_format` overrides `Accept`; XML (or
 * anything not JSON) asked for → 406, sent → 415. The FHIR JSON mime type changed between versions:
 * DSTU2 has `application/json+fhir` (https://hl7.org/fhir/DSTU2/http.html#mime-type), STU3 and R4
 * `application/fhir+json` (https://hl7.org/fhir/STU3/http.html#mime-type), and servers should
 * accept the other spelling too. Each version answers its own type unless a client asks for the
 * other one by name, as the HAPI FHIR server does; a request body may use any of them.
 */

export const FHIR_JSON_TYPE = 'application/fhir+json';
/** The DSTU2 FHIR JSON type, the legacy spelling in STU3 and R4. */
export const LEGACY_FHIR_JSON_TYPE = 'application/json+fhir';
export const PLAIN_JSON_TYPE = 'application/json';

export type ResponseFormat = typeof FHIR_JSON_TYPE | typeof LEGACY_FHIR_JSON_TYPE | typeof PLAIN_JSON_TYPE;

export type NegotiationResult = { ok: true; contentType: ResponseFormat } | { ok: false; message: string };

/** The FHIR JSON type a version answers by default. */
export function fhirJsonType(version: FhirVersion): ResponseFormat {
  return version === 'dstu2' ? LEGACY_FHIR_JSON_TYPE : FHIR_JSON_TYPE;
}

/** What a named JSON mime type is answered with in a version; undefined: not a JSON type. */
function answerFor(type: string, version: FhirVersion): ResponseFormat | undefined {
  switch (type) {
    case FHIR_JSON_TYPE:
      return FHIR_JSON_TYPE;
    case LEGACY_FHIR_JSON_TYPE:
      // R4 has no legacy type of its own: it answers its current one.
      return version === 'r4' ? FHIR_JSON_TYPE : LEGACY_FHIR_JSON_TYPE;
    case PLAIN_JSON_TYPE:
      return PLAIN_JSON_TYPE;
    default:
      return undefined;
  }
}

/** The response content type for an `Accept` header and an optional `_format` parameter. */
export function negotiateResponseFormat(
  accept: string | undefined,
  format: string | undefined,
  version: FhirVersion = 'r4',
): NegotiationResult {
  if (format !== undefined && format !== '') {
    const type = format.trim().toLowerCase().split(';')[0].trim();
    const chosen = type === 'json' ? fhirJsonType(version) : answerFor(type, version);
    return chosen
      ? { ok: true, contentType: chosen }
      : { ok: false, message: `_format=${format} is not supported: this server answers JSON only` };
  }
  if (!accept || accept.trim() === '') return { ok: true, contentType: fhirJsonType(version) };
  const ranges = accept
    .split(',')
    .map((part) => {
      const [range, ...params] = part.trim().toLowerCase().split(';');
      const q = params.map((p) => /^\s*q=([\d.]+)\s*$/.exec(p)).find(Boolean);
      return { range: range.trim(), q: q ? Number(q[1]) : 1 };
    })
    .filter((r) => r.q > 0)
    .sort((a, b) => b.q - a.q);
  for (const { range } of ranges) {
    const chosen =
      range === '*/*' || range === 'application/*' ? fhirJsonType(version) : answerFor(range, version);
    if (chosen) return { ok: true, contentType: chosen };
  }
  return {
    ok: false,
    message: `cannot answer in ${accept}: this server answers ${fhirJsonType(version)} or application/json`,
  };
}

/** True when a request's Content-Type is a JSON type the server reads (any FHIR spelling, or plain JSON). */
export function isJsonContentType(contentType: string | undefined): boolean {
  if (!contentType) return false;
  const type = contentType.split(';')[0].trim().toLowerCase();
  return type === FHIR_JSON_TYPE || type === LEGACY_FHIR_JSON_TYPE || type === PLAIN_JSON_TYPE;
}

/** `_pretty=true` asks for indented output (https://hl7.org/fhir/R4/http.html#general). */
export function isPretty(value: string | undefined): boolean {
  return value === 'true';
}
