import { createHash } from 'crypto';
import type { Response } from 'express';
import fresh from 'fresh';
import { isPretty, outcomeIn, type OperationOutcome } from '@app/fhir';
import { chargeResponse } from '../admission/response-charge';
import type { FhirRequest } from './fhir-route-state';
import { responseContentType } from './negotiation';
import { presentReply, type HttpReply } from './reply-presenter';
import { isFhirResult } from './results';
import { shapeResource } from './resource-shaping';

/** The handler's result as a reply: a domain result presented, a resource with the route's status. */
function asReply(req: FhirRequest, result: unknown, base: string): HttpReply {
  if (isFhirResult(result)) {
    const prefer = req.headers.prefer;
    return presentReply(
      result,
      req.fhir?.version ?? 'r4',
      base,
      typeof prefer === 'string' ? prefer : undefined,
    );
  }
  const status = req.fhir?.options.status ?? 200;
  return { status, body: result === undefined || result === null ? '' : result };
}

/**
 * A subsetted read (`_elements`, `_summary`) is not the version it came from: it gets a weak ETag of
 * its own (the version, then a digest of the subset served), so a cache never answers the whole
 * resource from it, and `If-Match` with it is refused as not a version ETag.
 */
function subsetEtag(etag: string | undefined, text: string): string | undefined {
  const version = /^W\/"(\d+)"$/.exec(etag ?? '')?.[1];
  if (version === undefined) return etag;
  const digest = createHash('sha256').update(text).digest('base64url').slice(0, 16);
  return `W/"${version}-${digest}"`;
}

/**
 * A conditional read the client's copy already answers (https://hl7.org/fhir/R4/http.html#cread):
 * a GET or HEAD whose `If-None-Match` names the ETag served, or whose `If-Modified-Since` is not
 * before Last-Modified (RFC 9110 §13.1.2, §13.1.3, as Express's `req.fresh` decides it).
 */
function clientHoldsIt(req: FhirRequest, status: number, headers: Record<string, string>): boolean {
  if (req.method !== 'GET' && req.method !== 'HEAD') return false;
  if ((status < 200 || status >= 300) && status !== 304) return false;
  return fresh(req.headers, { etag: headers.ETag, 'last-modified': headers['Last-Modified'] });
}

/**
 * The one way a FHIR handler's answer is written (https://hl7.org/fhir/R4/http.html): the status and
 * headers its result stands for (ETag, Last-Modified, Location …), the media type negotiated from
 * `Accept` and `_format`, `_elements`/`_summary` on routes that serve one resource, `_pretty`
 * indentation, 304 for a conditional read the client's copy answers, and the answer's bytes charged
 * to the client's share (admission's charging function). Stored JSON is sent as it is stored, in one
 * `writeHead` and `end`: no parse, no copy into a Buffer, no content-type re-parsing. Handlers return;
 * none writes to the response, except a stream (NDJSON), which is written as it is read.
 */
export function writeFhirReply(req: FhirRequest, res: Response, result: unknown, base: string): void {
  // a streamed answer has been written by its handler already
  if (res.headersSent) return;
  const reply = asReply(req, result, base);
  const headers: Record<string, string> = reply.headers ? { ...reply.headers } : {};
  let status = reply.status;
  let text: string | undefined;
  // '' (e.g. `Prefer: return=minimal`, https://hl7.org/fhir/R4/http.html#ops): status and headers only
  if (reply.body !== '') {
    const version = req.fhir?.version ?? 'r4';
    let body = reply.body;
    // an OperationOutcome built here speaks the version's issue codes (outcomeIn)
    if (
      typeof body === 'object' &&
      (body as { resourceType?: unknown }).resourceType === 'OperationOutcome'
    ) {
      body = outcomeIn(version, body as OperationOutcome);
    }
    text = typeof body === 'string' ? body : JSON.stringify(body);
    // Express parses the query string again at each `req.query`: a plain read has none to parse
    const query = req.url.includes('?') ? req.query : undefined;
    if (query !== undefined && req.fhir?.options.shape && status === 200) {
      const whole = text;
      text = shapeResource(req, version, text);
      if (text !== whole) {
        const etag = subsetEtag(headers.ETag, text);
        if (etag !== undefined) headers.ETag = etag;
      }
    }
    if (query !== undefined && isPretty(typeof query._pretty === 'string' ? query._pretty : undefined)) {
      text = JSON.stringify(JSON.parse(text), null, 2);
    }
    // the client's byte share (tenant fairness); string length stands for bytes (JSON is mostly ASCII)
    chargeResponse(res, text.length);
    const mediaType =
      reply.mediaType ??
      req.fhir?.options.mediaType ??
      req.fhir?.mediaType ??
      responseContentType(req, version);
    headers['Content-Type'] = `${mediaType}; charset=utf-8`;
  }
  if (clientHoldsIt(req, status, headers)) status = 304;
  if (status === 204 || status === 304) {
    // no body, so nothing that describes one
    delete headers['Content-Type'];
    res.removeHeader('Content-Type');
    text = undefined;
  } else {
    headers['Content-Length'] = text === undefined ? '0' : String(Buffer.byteLength(text));
  }
  res.writeHead(status, headers);
  // a HEAD answer carries the headers of the GET, without its body
  res.end(req.method === 'HEAD' ? undefined : text);
}
