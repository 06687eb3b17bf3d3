import { CanActivate, ExecutionContext, Injectable } from '@nestjs/common';
import type { Request } from 'express';
import { checkContentNegotiation, idParam, typeParam, versionParam } from './fhir-reply';

/**
 * Runs before the tenant guard on every FHIR store route: a path that is no FHIR route (unknown
 * version or resource type) answers 404 whatever the credentials, a malformed id 400, and a format
 * the server cannot speak 406/415 before any work is done.
 */
@Injectable()
export class FhirRouteGuard implements CanActivate {
  canActivate(context: ExecutionContext): boolean {
    const req = context.switchToHttp().getRequest<Request>();
    const params = req.params as Record<string, string | undefined>;
    // the population-level bulk base is R4 only and has no version segment
    const version = versionParam(params.version ?? (params.customer !== undefined ? 'r4' : ''));
    if (params.type !== undefined) typeParam(version, params.type);
    if (params.id !== undefined) idParam(params.id);
    checkContentNegotiation(req);
    return true;
  }
}
