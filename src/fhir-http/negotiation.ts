import type { Request } from 'express';
import {
  fhirJsonType,
  isJsonContentType,
  negotiateResponseFormat,
  parseFhirVersion,
  OperationOutcomeError,
  type FhirVersion,
  type ResponseFormat,
} from '@app/fhir';
import type { FhirBodyKind, FhirRequest } from './fhir-route-state';

const FORM = /^application\/x-www-form-urlencoded\s*(;|$)/i;

/** `_format`. Express parses the query string anew at each `req.query`: a URL without one has none. */
function formatParam(req: Request): string | undefined {
  if (!req.url.includes('?')) return undefined;
  return typeof req.query._format === 'string' ? req.query._format : undefined;
}

type Negotiated = ReturnType<typeof negotiateResponseFormat>;

/** At most this many `Accept` values remembered per version; past it, the memory starts afresh. */
export const REMEMBERED_ACCEPT_VALUES = 256;

/**
 * What each `Accept` value negotiates, per version: a client sends the same value on every request
 * (e.g. `application/fhir+json`), and parsing it (ranges, parameters, q-values, sorting) is work and
 * garbage on each one. Bounded, so that random values cannot grow it.
 */
const negotiatedAccept = new Map<FhirVersion, Map<string, Negotiated>>();

function negotiate(accept: string | undefined, format: string | undefined, version: FhirVersion): Negotiated {
  if (accept === undefined || format !== undefined) return negotiateResponseFormat(accept, format, version);
  let remembered = negotiatedAccept.get(version);
  if (remembered === undefined) negotiatedAccept.set(version, (remembered = new Map()));
  let negotiated = remembered.get(accept);
  if (negotiated === undefined) {
    negotiated = negotiateResponseFormat(accept, undefined, version);
    if (remembered.size >= REMEMBERED_ACCEPT_VALUES) remembered.clear();
    remembered.set(accept, negotiated);
  }
  return negotiated;
}

/**
 * The media type of the answer for `Accept` and `_format` (`_format` wins), or 406 before any
 * work when the server cannot speak what is asked (https://hl7.org/fhir/R4/http.html#mime-type).
 */
export function responseContentType(req: Request, version: FhirVersion): ResponseFormat {
  const negotiated = negotiate(req.headers.accept, formatParam(req), version);
  if (!negotiated.ok) throw new OperationOutcomeError('not-supported', negotiated.message, { status: 406 });
  return negotiated.contentType;
}

/** 415 for a body the route cannot read. */
export function checkRequestBody(req: Request, kind: FhirBodyKind, version: FhirVersion): void {
  const contentType = req.headers['content-type'];
  if (kind === 'resource' && !isJsonContentType(contentType)) {
    throw new OperationOutcomeError(
      'not-supported',
      `Content-Type ${contentType ?? '(none)'} is not supported: send ${fhirJsonType(version)} or application/json`,
      { status: 415 },
    );
  }
  const hasBody =
    Number(req.headers['content-length'] ?? 0) > 0 || req.headers['transfer-encoding'] !== undefined;
  if (kind === 'form' && hasBody && !FORM.test(contentType ?? '')) {
    throw new OperationOutcomeError(
      'not-supported',
      `Content-Type ${contentType ?? '(none)'} is not supported on _search: send application/x-www-form-urlencoded`,
      { status: 415 },
    );
  }
  // an XML body would otherwise reach the operation unread (as no parameters at all)
  if (kind === 'parameters' && hasBody && !isJsonContentType(contentType) && !FORM.test(contentType ?? '')) {
    throw new OperationOutcomeError(
      'not-supported',
      `Content-Type ${contentType ?? '(none)'} is not supported by this operation: send ${fhirJsonType(version)} (a Parameters resource) or application/x-www-form-urlencoded`,
      { status: 415 },
    );
  }
}

/**
 * The FHIR version of a request: the one its route checked, else the first path segment (an
 * error before routing), else R4. Errors are answered in that version's media type and codes.
 */
export function requestVersion(req: Request): FhirVersion {
  const routed = (req as FhirRequest).fhir?.version;
  if (routed) return routed;
  const param = (req.params as Record<string, string | undefined> | undefined)?.version;
  return parseFhirVersion(param ?? '') ?? parseFhirVersion(req.path.split('/')[1] ?? '') ?? 'r4';
}
