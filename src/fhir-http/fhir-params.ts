import { createParamDecorator, ExecutionContext } from '@nestjs/common';
import type { Request } from 'express';
import { OperationOutcomeError, type FhirVersion } from '@app/fhir';
import type { TenantContext } from '../tenancy/tenant-context';
import type { TenantRequest } from '../tenancy/tenant.guard';
import { routeState } from './fhir-route-state';
import { patchDocument, type PatchDocument } from './patch-body';
import { parametersPairs, queryPairs, type SearchPairs } from './search-pairs';

function request(context: ExecutionContext): Request {
  return context.switchToHttp().getRequest<Request>();
}

/** The FHIR version of the route, checked once by the route guard. */
export const FhirVersionParam = createParamDecorator(
  (_data: unknown, context: ExecutionContext): FhirVersion => routeState(request(context)).version,
);

/**
 * The resource type of the route (its `:type`, or the fixed type of its path), checked by the
 * guard. `@FhirTypeParam('optional')` on a handler that also serves a level without a type.
 */
export const FhirTypeParam = createParamDecorator(
  (data: 'optional' | undefined, context: ExecutionContext): string | undefined => {
    const type = routeState(request(context)).type;
    if (type === undefined && data !== 'optional')
      throw new Error('@FhirTypeParam() on a route without a resource type');
    return type;
  },
);

/**
 * The logical id of the route, checked by the guard. `@FhirIdParam('optional')` on a handler that
 * also serves a level without an id (an operation at type and instance level).
 */
export const FhirIdParam = createParamDecorator(
  (data: 'optional' | undefined, context: ExecutionContext): string | undefined => {
    const id = routeState(request(context)).id;
    if (id === undefined && data !== 'optional') throw new Error('@FhirIdParam() on a route without :id');
    return id;
  },
);

/** What a handler of one resource acts on: the caller's tenant, the route's version, type and id. */
export interface FhirInstance {
  ctx: TenantContext;
  version: FhirVersion;
  type: string;
  id: string;
}

/**
 * `@Tenant()`, `@FhirVersionParam()`, `@FhirTypeParam()` and `@FhirIdParam()` in one parameter, for
 * the routes of one resource (read, vread, update, patch, delete): Nest resolves every parameter
 * decorator on every request through an execution context, an async resolver and an async pipe chain
 * of its own, so one parameter instead of four spares a read by id three of each.
 */
export const FhirInstanceParam = createParamDecorator(
  (_data: unknown, context: ExecutionContext): FhirInstance => {
    const req = context.switchToHttp().getRequest<TenantRequest>();
    const { version, type, id } = routeState(req);
    if (type === undefined || id === undefined) {
      throw new Error('@FhirInstanceParam() on a route without a resource type and :id');
    }
    const ctx = req.tenant;
    if (!ctx) throw new Error('@FhirInstanceParam() on a route without credentials');
    return { ctx, version, type, id };
  },
);

/**
 * The search parameters, in the order sent: the query string, then a `_search` form body or an
 * operation's Parameters body (https://hl7.org/fhir/R4/operations.html#request).
 */
export const FhirSearchParams = createParamDecorator(
  (_data: unknown, context: ExecutionContext): SearchPairs => {
    const req = request(context);
    return [...queryPairs(req), ...(req.method === 'POST' ? parametersPairs(req.body) : [])];
  },
);

/** The JSON body of a POST/PUT: one JSON object (a FHIR resource), or 400. */
export const FhirResourceBody = createParamDecorator(
  (_data: unknown, context: ExecutionContext): Record<string, unknown> => {
    const body: unknown = request(context).body;
    if (body === null || typeof body !== 'object' || Array.isArray(body)) {
      throw OperationOutcomeError.invalid('the request body must be a JSON object (a FHIR resource)');
    }
    return body as Record<string, unknown>;
  },
);

/** The body of a PATCH request as the patch document its Content-Type names (415 for any other type). */
export const FhirPatchBody = createParamDecorator(
  (_data: unknown, context: ExecutionContext): PatchDocument => {
    const req = request(context);
    return patchDocument(req.headers['content-type'], req.body);
  },
);
