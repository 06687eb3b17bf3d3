import type { Request, Response } from 'express';
import { chargeResponse } from '../../admission/response-charge';
import {
  fhirJsonType,
  isJsonContentType,
  isPretty,
  isResourceType,
  isValidId,
  negotiateResponseFormat,
  OperationOutcomeError,
  parseFhirVersion,
  type FhirVersion,
} from '@app/fhir';

/** What a FHIR service method answers; the controller sends it as is. */
export interface FhirReply {
  status: number;
  /** JSON text (stored resources are served untouched) or an object to serialise. */
  body: string | object;
  headers?: Record<string, string>;
}

/** `R4`, `r4`, `STU3`, … → the version; anything else → 404 OperationOutcome (the route does not exist). */
export function versionParam(segment: string): FhirVersion {
  const version = parseFhirVersion(segment);
  if (!version)
    throw OperationOutcomeError.notFound(`unknown FHIR version "${segment}": use r4, stu3 or dstu2`);
  return version;
}

export function typeParam(version: FhirVersion, type: string): string {
  if (!isResourceType(version, type)) {
    throw OperationOutcomeError.notFound(`unknown resource type "${type}" in ${version.toUpperCase()}`);
  }
  return type;
}

export function idParam(id: string): string {
  if (!isValidId(id)) {
    throw OperationOutcomeError.invalid(`"${id}" is not a valid FHIR id (1–64 of A-Z a-z 0-9 - .)`);
  }
  return id;
}

/**
 * Refuses before any work what the server cannot answer (406: XML or another format asked for) or
 * read (415: a body that is not JSON). https://hl7.org/fhir/R4/http.html#mime-type
 */
export function checkContentNegotiation(req: Request): void {
  const format = typeof req.query._format === 'string' ? req.query._format : undefined;
  const negotiated = negotiateResponseFormat(req.headers.accept, format, requestVersion(req));
  if (!negotiated.ok) throw new OperationOutcomeError('not-supported', negotiated.message, { status: 406 });
  if (req.method === 'POST' || req.method === 'PUT') {
    if (!isJsonContentType(req.headers['content-type'])) {
      throw new OperationOutcomeError(
        'not-supported',
        `Content-Type ${req.headers['content-type'] ?? '(none)'} is not supported: send ${fhirJsonType(requestVersion(req))} or application/json`,
        { status: 415 },
      );
    }
  }
}

/** The FHIR version a request names (route parameter, else first path segment); R4 when none. */
export function requestVersion(req: Request): FhirVersion {
  const param = (req.params as Record<string, string | undefined> | undefined)?.version;
  return parseFhirVersion(param ?? '') ?? parseFhirVersion(req.path.split('/')[1] ?? '') ?? 'r4';
}

/** The parsed JSON body of a POST/PUT: must be one JSON object. */
export function resourceBody(body: unknown): Record<string, unknown> {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) {
    throw OperationOutcomeError.invalid('the request body must be a JSON object (a FHIR resource)');
  }
  return body as Record<string, unknown>;
}

/** Sends a reply in the negotiated JSON flavour, indented on `_pretty=true`. */
export function sendReply(req: Request, res: Response, reply: FhirReply): void {
  const format = typeof req.query._format === 'string' ? req.query._format : undefined;
  const version = requestVersion(req);
  const negotiated = negotiateResponseFormat(req.headers.accept, format, version);
  const contentType = negotiated.ok ? negotiated.contentType : fhirJsonType(version);
  const pretty = isPretty(typeof req.query._pretty === 'string' ? req.query._pretty : undefined);
  if (reply.headers) res.set(reply.headers);
  if (reply.body === '') {
    // `Prefer: return=minimal`: status and headers only (https://hl7.org/fhir/R4/http.html#ops)
    res.status(reply.status).end();
    return;
  }
  let text = typeof reply.body === 'string' ? reply.body : JSON.stringify(reply.body);
  if (pretty) text = JSON.stringify(JSON.parse(text), null, 2);
  // the client's byte share (tenant fairness); string length stands for bytes (JSON is mostly ASCII)
  chargeResponse(res, text.length);
  res.status(reply.status).type(`${contentType}; charset=utf-8`).send(text);
}
