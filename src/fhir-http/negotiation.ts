import type { Request } from 'express';
import {
  isJsonContentType,
  negotiateResponseFormat,
  OperationOutcomeError,
  type FhirVersion,
  type ResponseFormat,
} from '@app/fhir';
import type { FhirBodyKind } from './fhir-route-state';

const FORM = /^application\/x-www-form-urlencoded\s*(;|$)/i;

function formatParam(req: Request): string | undefined {
  return typeof req.query._format === 'string' ? req.query._format : undefined;
}

/**
 * The media type of the answer for `Accept` and `_format` (`_format` wins), or 406 before any
 * work when the server cannot speak what is asked (https://hl7.org/fhir/R4/http.html#mime-type).
 */
export function responseContentType(req: Request, _version: FhirVersion): ResponseFormat {
  const negotiated = negotiateResponseFormat(req.headers.accept, formatParam(req));
  if (!negotiated.ok) throw new OperationOutcomeError('not-supported', negotiated.message, { status: 406 });
  return negotiated.contentType;
}

/** 415 for a body the route cannot read. */
export function checkRequestBody(req: Request, kind: FhirBodyKind, _version: FhirVersion): void {
  const contentType = req.headers['content-type'];
  if (kind === 'resource' && !isJsonContentType(contentType)) {
    throw new OperationOutcomeError(
      'not-supported',
      `Content-Type ${contentType ?? '(none)'} is not supported: send application/fhir+json or application/json`,
      { status: 415 },
    );
  }
  if (kind === 'form') {
    const hasBody =
      Number(req.headers['content-length'] ?? 0) > 0 || req.headers['transfer-encoding'] !== undefined;
    if (hasBody && !FORM.test(contentType ?? '')) {
      throw new OperationOutcomeError(
        'not-supported',
        `Content-Type ${contentType ?? '(none)'} is not supported on _search: send application/x-www-form-urlencoded`,
        { status: 415 },
      );
    }
  }
}
