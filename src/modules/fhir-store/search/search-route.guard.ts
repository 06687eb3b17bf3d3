import { CanActivate, ExecutionContext, Injectable } from '@nestjs/common';
import type { Request } from 'express';
import { negotiateResponseFormat, OperationOutcomeError } from '@app/fhir';
import { idParam, typeParam, versionParam } from '../fhir-reply';

const FORM = /^application\/x-www-form-urlencoded\s*(;|$)/i;

/**
 * Runs before the tenant guard on the search routes, like the store's FhirRouteGuard: an unknown
 * version or type answers 404 whatever the credentials, a malformed id 400, a format other than
 * JSON 406. `POST …/_search` takes a form body (https://hl7.org/fhir/R4/http.html#search), not JSON:
 * any other body type is 415.
 */
@Injectable()
export class SearchRouteGuard implements CanActivate {
  canActivate(context: ExecutionContext): boolean {
    const req = context.switchToHttp().getRequest<Request>();
    const params = req.params as Record<string, string | undefined>;
    const version = versionParam(params.version ?? '');
    if (params.type !== undefined) typeParam(version, params.type);
    if (params.id !== undefined) idParam(params.id);
    const format = typeof req.query._format === 'string' ? req.query._format : undefined;
    const negotiated = negotiateResponseFormat(req.headers.accept, format, version);
    if (!negotiated.ok) throw new OperationOutcomeError('not-supported', negotiated.message, { status: 406 });
    const contentType = req.headers['content-type'];
    const hasBody =
      Number(req.headers['content-length'] ?? 0) > 0 || req.headers['transfer-encoding'] !== undefined;
    if (req.method === 'POST' && hasBody && !FORM.test(contentType ?? '')) {
      throw new OperationOutcomeError(
        'not-supported',
        `Content-Type ${contentType ?? '(none)'} is not supported on _search: send application/x-www-form-urlencoded`,
        { status: 415 },
      );
    }
    return true;
  }
}
