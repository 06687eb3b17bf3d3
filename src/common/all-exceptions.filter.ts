import { ArgumentsHost, Catch, ExceptionFilter, Logger } from '@nestjs/common';
import type { Request, Response } from 'express';
import { fhirJsonType } from '@app/fhir';
import { loggableError } from '../logging/loggable-error';
import { loggablePath } from '../logging/request-logs';
import { embeddedDatabaseVerdict } from '../database/documentdb-supervisor';
import { awaitsEngineVerdict, mapError, outcomeOf } from './error-mapping';
import { isFhirRequest } from '../fhir-http/fhir-route-state';
import { requestVersion } from '../fhir-http/negotiation';

const REASON: Record<number, string> = {
  400: 'bad_request',
  401: 'unauthorized',
  403: 'forbidden',
  404: 'not_found',
  405: 'method_not_allowed',
  409: 'conflict',
  410: 'gone',
  413: 'payload_too_large',
  414: 'uri_too_long',
  415: 'unsupported_media_type',
  429: 'too_many_requests',
  500: 'internal_error',
  503: 'service_unavailable',
  504: 'timeout',
};

/**
 * One filter for every error: requests routed to a FHIR handler (its `@FhirRoute()` metadata) or
 * under a FHIR base answer an OperationOutcome, the others
 * `{ error, message }` (docs/api.md §12). No stack trace ever reaches a client.
 */
@Catch()
export class AllExceptionsFilter implements ExceptionFilter {
  private readonly logger = new Logger('Errors');

  catch(exception: unknown, host: ArgumentsHost): void | Promise<void> {
    if (!awaitsEngineVerdict(exception)) return this.answer(exception, host);
    // a generic engine error right as the embedded database dies: its verdict first (503 or 500)
    return embeddedDatabaseVerdict().then(
      () => this.answer(exception, host),
      () => this.answer(exception, host),
    );
  }

  private answer(exception: unknown, host: ArgumentsHost): void {
    const ctx = host.switchToHttp();
    const res = ctx.getResponse<Response>();
    const req = ctx.getRequest<Request>();
    const mapped = mapError(exception);
    if (mapped.internal) {
      this.logger.error({ err: exception, path: loggablePath(req?.path) }, 'unhandled error');
    }
    // the request's log line (pino-http reads res.err) names the error behind a 5xx
    if (res && mapped.status >= 500) Object.assign(res, { err: loggableError(exception) });
    if (!res || res.headersSent) {
      res?.end?.();
      return;
    }
    for (const [k, v] of Object.entries(mapped.headers)) res.setHeader(k, v);
    res.status(mapped.status);
    if (req && isFhirRequest(req)) {
      const version = requestVersion(req);
      res.setHeader('Content-Type', `${fhirJsonType(version)}; charset=utf-8`);
      res.send(JSON.stringify(outcomeOf(exception, version, mapped)));
      return;
    }
    res.json(
      mapped.body ?? { error: REASON[mapped.status] ?? `http_${mapped.status}`, message: mapped.message },
    );
  }
}
