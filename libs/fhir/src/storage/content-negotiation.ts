/**
 * FHIR content negotiation (https://hl7.org/fhir/R4/http.html#mime-type): the service speaks JSON
 * only. `_format` overrides `Accept`; XML (or anything not JSON) asked for → 406, sent → 415.
 */

export const FHIR_JSON_TYPE = 'application/fhir+json';
export const PLAIN_JSON_TYPE = 'application/json';

export type ResponseFormat = typeof FHIR_JSON_TYPE | typeof PLAIN_JSON_TYPE;

export type NegotiationResult = { ok: true; contentType: ResponseFormat } | { ok: false; message: string };

const FORMAT_ALIASES: Record<string, ResponseFormat> = {
  json: FHIR_JSON_TYPE,
  'application/fhir+json': FHIR_JSON_TYPE,
  'application/json+fhir': FHIR_JSON_TYPE,
  'application/json': PLAIN_JSON_TYPE,
};

/** The response content type for an `Accept` header and an optional `_format` parameter. */
export function negotiateResponseFormat(
  accept: string | undefined,
  format: string | undefined,
): NegotiationResult {
  if (format !== undefined && format !== '') {
    const chosen = FORMAT_ALIASES[format.trim().toLowerCase().split(';')[0].trim()];
    return chosen
      ? { ok: true, contentType: chosen }
      : { ok: false, message: `_format=${format} is not supported: this server answers JSON only` };
  }
  if (!accept || accept.trim() === '') return { ok: true, contentType: FHIR_JSON_TYPE };
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
    if (range === FHIR_JSON_TYPE || range === 'application/json+fhir')
      return { ok: true, contentType: FHIR_JSON_TYPE };
    if (range === PLAIN_JSON_TYPE) return { ok: true, contentType: PLAIN_JSON_TYPE };
    if (range === '*/*' || range === 'application/*') return { ok: true, contentType: FHIR_JSON_TYPE };
  }
  return {
    ok: false,
    message: `cannot answer in ${accept}: this server answers application/fhir+json or application/json`,
  };
}

/** True when a request's Content-Type is a JSON type the server reads. */
export function isJsonContentType(contentType: string | undefined): boolean {
  if (!contentType) return false;
  const type = contentType.split(';')[0].trim().toLowerCase();
  return type === FHIR_JSON_TYPE || type === PLAIN_JSON_TYPE;
}

/** `_pretty=true` asks for indented output (https://hl7.org/fhir/R4/http.html#general). */
export function isPretty(value: string | undefined): boolean {
  return value === 'true';
}
