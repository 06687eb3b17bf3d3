import { CanActivate, ExecutionContext, Injectable, SetMetadata } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import type { Request } from 'express';
import { isJsonContentType, negotiateResponseFormat, OperationOutcomeError } from '@app/fhir';
import { idParam, typeParam, versionParam } from '../fhir-reply';

const FORM = /^application\/x-www-form-urlencoded\s*(;|$)/i;
const PARAMETERS_BODY = 'search-route:parameters-body';

/** An operation invoked with POST takes a Parameters resource (https://hl7.org/fhir/R4/operations.html#request). */
export const TakesParameters = (): MethodDecorator => SetMetadata(PARAMETERS_BODY, true);

/**
 * Runs before the tenant guard on the search routes, like the store's FhirRouteGuard: an unknown
 * version or type answers 404 whatever the credentials, a malformed id 400, a format other than
 * JSON 406. `POST …/_search` takes a form body (https://hl7.org/fhir/R4/http.html#search), not JSON:
 * any other body type is 415.
 */
@Injectable()
export class SearchRouteGuard implements CanActivate {
  constructor(private readonly reflector: Reflector) {}

  canActivate(context: ExecutionContext): boolean {
    const req = context.switchToHttp().getRequest<Request>();
    const params = req.params as Record<string, string | undefined>;
    const version = versionParam(params.version ?? '');
    if (params.compartment !== undefined) typeParam(version, params.compartment);
    if (params.type !== undefined) typeParam(version, params.type);
    if (params.id !== undefined) idParam(params.id);
    const format = typeof req.query._format === 'string' ? req.query._format : undefined;
    const negotiated = negotiateResponseFormat(req.headers.accept, format, version);
    if (!negotiated.ok) throw new OperationOutcomeError('not-supported', negotiated.message, { status: 406 });
    const contentType = req.headers['content-type'];
    const hasBody =
      Number(req.headers['content-length'] ?? 0) > 0 || req.headers['transfer-encoding'] !== undefined;
    const parameters =
      this.reflector.get<boolean | undefined>(PARAMETERS_BODY, context.getHandler()) === true;
    if (req.method === 'POST' && hasBody && !FORM.test(contentType ?? '')) {
      if (parameters && isJsonContentType(contentType)) return true;
      throw new OperationOutcomeError(
        'not-supported',
        `Content-Type ${contentType ?? '(none)'} is not supported here: send application/x-www-form-urlencoded${parameters ? ' or a Parameters resource as application/fhir+json' : ''}`,
        { status: 415 },
      );
    }
    return true;
  }
}
