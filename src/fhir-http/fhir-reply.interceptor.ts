import { createHash } from 'crypto';
import { CallHandler, ExecutionContext, Inject, Injectable, NestInterceptor } from '@nestjs/common';
import type { Response } from 'express';
import { map, type Observable } from 'rxjs';
import { isPretty, outcomeIn, type OperationOutcome } from '@app/fhir';
import { chargeResponse } from '../admission/response-charge';
import { SETTINGS } from '../config/config.module';
import type { Settings } from '../config/settings';
import type { FhirRequest } from './fhir-route-state';
import { responseContentType } from './negotiation';
import { presentReply, type HttpReply } from './reply-presenter';
import { isFhirResult } from './results';
import { shapeResource } from './resource-shaping';

/**
 * The one way a FHIR answer is written (https://hl7.org/fhir/R4/http.html): the status and headers
 * the handler chose (ETag, Last-Modified, Location …), the media type negotiated from `Accept` and
 * `_format`, `_elements`/`_summary` on routes that serve one resource, `_pretty` indentation, and the
 * answer's bytes charged to the client's share (the tenant guard's charging function). Handlers
 * return; none writes to the response, except a stream (NDJSON), which is written as it is read.
 */
@Injectable()
export class FhirReplyInterceptor implements NestInterceptor {
  constructor(@Inject(SETTINGS) private readonly settings: Pick<Settings, 'urls'>) {}

  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    const http = context.switchToHttp();
    const req = http.getRequest<FhirRequest>();
    const res = http.getResponse<Response>();
    return next
      .handle()
      .pipe(map((result: unknown) => writeReply(req, res, result, this.settings.urls.base)));
  }
}

/** The handler's result as a reply: a domain result presented, a resource with the route's status. */
function asReply(req: FhirRequest, result: unknown, base: string): HttpReply {
  if (isFhirResult(result)) {
    return presentReply(result, req.fhir?.version ?? 'r4', base, req.get('prefer'));
  }
  const status = req.fhir?.options.status ?? 200;
  return { status, body: result === undefined || result === null ? '' : result };
}

/**
 * A subsetted read (`_elements`, `_summary`) is not the version it came from: it gets a weak ETag of
 * its own (the version, then a digest of the subset served), so a cache never answers the whole
 * resource from it, and `If-Match` with it is refused as not a version ETag.
 */
function subsetEtag(res: Response, text: string): void {
  const version = /^W\/"(\d+)"$/.exec(String(res.getHeader('ETag') ?? ''))?.[1];
  if (version === undefined) return;
  const digest = createHash('sha256').update(text).digest('base64url').slice(0, 16);
  res.setHeader('ETag', `W/"${version}-${digest}"`);
}

/** Sets status and headers and returns the body text for Nest to send (undefined: no body). */
export function writeReply(
  req: FhirRequest,
  res: Response,
  result: unknown,
  base: string,
): string | undefined {
  // a streamed answer has been written by its handler already
  if (res.headersSent) return undefined;
  const reply = asReply(req, result, base);
  if (reply.headers) res.set(reply.headers);
  res.status(reply.status);
  if (reply.body === '') {
    // e.g. `Prefer: return=minimal`: status and headers only (https://hl7.org/fhir/R4/http.html#ops)
    return undefined;
  }
  const version = req.fhir?.version ?? 'r4';
  let body = reply.body;
  // an OperationOutcome built here speaks the version's issue codes (outcomeIn)
  if (typeof body === 'object' && (body as { resourceType?: unknown }).resourceType === 'OperationOutcome') {
    body = outcomeIn(version, body as OperationOutcome);
  }
  let text = typeof body === 'string' ? body : JSON.stringify(body);
  if (req.fhir?.options.shape && reply.status === 200) {
    const whole = text;
    text = shapeResource(req, version, text);
    if (text !== whole) subsetEtag(res, text);
  }
  if (isPretty(typeof req.query._pretty === 'string' ? req.query._pretty : undefined)) {
    text = JSON.stringify(JSON.parse(text), null, 2);
  }
  // the client's byte share (tenant fairness); string length stands for bytes (JSON is mostly ASCII)
  chargeResponse(res, text.length);
  const mediaType = reply.mediaType ?? req.fhir?.options.mediaType ?? responseContentType(req, version);
  res.type(`${mediaType}; charset=utf-8`);
  return text;
}
