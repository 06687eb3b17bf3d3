import { CanActivate, ExecutionContext, Injectable } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { isResourceType, parseFhirVersion, type FhirVersion } from '@app/fhir';
import { FHIR_ROUTE, type FhirRequest, type FhirRouteOptions } from './fhir-route-state';
import { checkRequestBody, responseContentType } from './negotiation';
import { idParam, typeParam, versionParam } from './path-params';

/** A segment that names a FHIR release, known to this server or not (`r5`, `STU4`, `dstu1`). */
const RELEASE_NAME = /^(?:r|stu|dstu)\d+$/i;

/**
 * Runs first on every FHIR route, before the credentials are looked at: a path that is no FHIR
 * route of this server (unknown version or resource type) answers 404 whatever the credentials, a
 * malformed id 400, a format the server cannot speak 406 and a body it cannot read 415, before any
 * work. What it checked is kept on the request for the parameter decorators: no handler parses
 * the version segment again.
 */
@Injectable()
export class FhirRouteGuard implements CanActivate {
  constructor(private readonly reflector: Reflector) {}

  canActivate(context: ExecutionContext): boolean {
    const req = context.switchToHttp().getRequest<FhirRequest>();
    const options =
      this.reflector.getAllAndOverride<FhirRouteOptions | undefined>(FHIR_ROUTE, [
        context.getHandler(),
        context.getClass(),
      ]) ?? {};
    const params = req.params as Record<string, string | undefined>;
    // the population gateway and the directory view are R4 only: no version segment
    const segment = params.version ?? 'r4';
    // A route made only of parameters (`/:version/:type/:id`) matches any path: it answers as
    // FHIR only when its first segment names a FHIR release; one with a fixed segment
    // (`$validate`, `_history`, `metadata`) is FHIR whatever its version segment says.
    if (parseFhirVersion(segment) || RELEASE_NAME.test(segment) || hasFixedSegment(req.route)) {
      req.fhirRoute = options;
    }
    const version = versionParam(segment);
    // `:type`, or the fixed type of a path such as `/{v}/Patient/{id}/$everything`
    const type = params.type ?? fixedType(req.route, version);
    if (type !== undefined) typeParam(version, type, options.types);
    const id = params.id;
    if (id !== undefined) idParam(id);
    if (options.negotiate !== false) responseContentType(req, version);
    if (req.method === 'POST' || req.method === 'PUT') checkRequestBody(req, options.body ?? 'any', version);
    req.fhir = { options, version, type, id };
    return true;
  }
}

function routePath(route: unknown): string {
  const path = (route as { path?: unknown } | undefined)?.path;
  return typeof path === 'string' ? path : '';
}

function fixedType(route: unknown, version: FhirVersion): string | undefined {
  return routePath(route)
    .split('/')
    .find((segment) => isResourceType(version, segment));
}

function hasFixedSegment(route: unknown): boolean {
  return routePath(route)
    .split('/')
    .slice(2)
    .some((segment) => segment !== '' && !segment.startsWith(':'));
}
