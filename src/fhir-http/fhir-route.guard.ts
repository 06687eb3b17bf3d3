import { CanActivate, ExecutionContext, Injectable } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import type { Response } from 'express';
import { isResourceType, parseFhirVersion, type FhirVersion } from '@app/fhir';
import { FhirAdmission } from '../admission/fhir-admission';
import type { TenantRequest } from '../tenancy/tenant.guard';
import type { TenantContext } from '../tenancy/tenant-context';
import type { TenantOptions } from '../tenancy/tenant-options';
import { TenantResolver } from '../tenancy/tenant-resolver';
import { FHIR_OPERATION, type FhirOperationDefinition } from './fhir-operation-definition';
import {
  FHIR_ROUTE,
  laneOf,
  type ControllerClass,
  type FhirRequest,
  type FhirRouteOptions,
  type RouteHandler,
} from './fhir-route-state';
import { checkRequestBody, responseContentType } from './negotiation';
import { idParam, typeParam, versionParam } from './path-params';
import { checkSmartScopes } from './smart-scope-check';

/** A segment that names a FHIR release, known to this server or not (`r5`, `STU4`, `dstu1`). */
const RELEASE_NAME = /^(?:r|stu|dstu)\d+$/i;

/** What a handler's decorators say, read once per handler (not per request). */
export interface CompiledRoute {
  options: FhirRouteOptions;
  /** The credentials asked of the caller; undefined on public routes. */
  tenant?: TenantOptions;
  operation?: FhirOperationDefinition;
  /** Per Express route path of the handler: whether it has a fixed segment after the version. */
  fixedSegment: Map<string, boolean>;
}

/**
 * The one guard of a FHIR route (`@FhirRoute()`), its steps in this order:
 * 1. the route: a path that is no FHIR route of this server (unknown version or resource type)
 *    answers 404 whatever the credentials, a malformed id 400, a format the server cannot speak 406
 *    and a body it cannot read 415, before any work; what it checked is kept on the request
 *    (`req.fhir`) for the parameter decorators, so no handler parses the version segment again;
 * 2. the credentials (TenantResolver, read or write as the route's kind says) into `req.tenant`;
 * 3. admission: the caller's slot and its turn in the lane its route declares (`lane`);
 * 4. the SMART scopes of the resolved context allow this interaction.
 * One guard with the handler's metadata read once: each guard Nest runs costs a step of its own on
 * every request, and a read by id is mostly such steps.
 */
@Injectable()
export class FhirRouteGuard implements CanActivate {
  private readonly compiled = new WeakMap<object, CompiledRoute>();

  constructor(
    private readonly reflector: Reflector,
    private readonly tenants: TenantResolver,
    private readonly admission: FhirAdmission,
  ) {}

  canActivate(context: ExecutionContext): boolean | Promise<boolean> {
    const http = context.switchToHttp();
    return this.check(
      this.routeOf(context.getHandler() as RouteHandler, context.getClass()),
      http.getRequest<FhirRequest & TenantRequest>(),
      http.getResponse<Response>(),
    );
  }

  /**
   * The four steps for a route read once by `routeOf`: what `canActivate` runs under Nest's guard
   * consumer, and what a compiled FHIR route (compiled-fhir-route.ts) calls directly.
   */
  check(route: CompiledRoute, req: FhirRequest & TenantRequest, res: Response): boolean | Promise<boolean> {
    const { options } = route;
    const params = req.params as Record<string, string | undefined>;
    // the population gateway and the directory view are R4 only: no version segment
    const segment = params.version ?? 'r4';
    const path = routePath(req.route);
    // A route made only of parameters (`/:version/:type/:id`) matches any path: it answers as
    // FHIR only when its first segment names a FHIR release; one with a fixed segment
    // (`$validate`, `_history`, `metadata`) is FHIR whatever its version segment says.
    if (parseFhirVersion(segment) || RELEASE_NAME.test(segment) || hasFixedSegment(route, path)) {
      req.fhirRoute = options;
    }
    const version = versionParam(segment);
    // `:type`, or the fixed type of a path such as `/{v}/Patient/{id}/$everything`
    const type = params.type ?? fixedType(path, version);
    if (type !== undefined) typeParam(version, type, options.types);
    const id = params.id;
    if (id !== undefined) idParam(id);
    const mediaType = options.negotiate === false ? undefined : responseContentType(req, version);
    if (req.method === 'POST' || req.method === 'PUT') checkRequestBody(req, options.body ?? 'any', version);
    req.fhir = { options, version, type, id, mediaType };
    if (route.tenant === undefined) return true;
    return this.admit(route, route.tenant, req, res, path);
  }

  /**
   * Steps 2–4. Each step that can answer at once does (a token the caches know, a lane with room):
   * a read then passes the guard without a promise of ours; a step that must wait is awaited.
   */
  private admit(
    route: CompiledRoute,
    tenant: TenantOptions,
    req: FhirRequest & TenantRequest,
    res: Response,
    path: string,
  ): boolean | Promise<boolean> {
    const resolved = this.tenants.resolve(req, tenant);
    return resolved instanceof Promise
      ? resolved.then((ctx) => this.admitTenant(route, ctx, req, res, path))
      : this.admitTenant(route, resolved, req, res, path);
  }

  private admitTenant(
    route: CompiledRoute,
    ctx: TenantContext,
    req: FhirRequest & TenantRequest,
    res: Response,
    path: string,
  ): boolean | Promise<boolean> {
    req.tenant = ctx;
    if (route.options.admitted === false) return this.allowed(route, ctx, req, path);
    // the context with the request's charges, as admission made it (one object, no spread here)
    const admitted = this.admission.admit(ctx, laneOf(route.options, req.method), req, res);
    return admitted instanceof Promise
      ? admitted.then((turn) => this.allowed(route, turn, req, path))
      : this.allowed(route, admitted, req, path);
  }

  private allowed(
    route: CompiledRoute,
    ctx: TenantContext,
    req: FhirRequest & TenantRequest,
    path: string,
  ): true {
    req.tenant = ctx;
    const compartment = (req.params as Record<string, string | undefined>).compartment;
    checkSmartScopes(ctx, req.fhir!, route.operation, { method: req.method, routePath: path, compartment });
    return true;
  }

  /** The route of a handler (the controller's method) of a controller class, read once. */
  routeOf(handler: RouteHandler, controller: ControllerClass): CompiledRoute {
    let route = this.compiled.get(handler);
    if (route === undefined) {
      const options =
        this.reflector.getAllAndOverride<FhirRouteOptions | undefined>(FHIR_ROUTE, [handler, controller]) ??
        {};
      route = {
        options,
        tenant:
          options.tenant === false
            ? undefined
            : { ...(options.tenant ?? {}), readRoute: options.kind === 'read' },
        operation: this.reflector.get<FhirOperationDefinition | undefined>(FHIR_OPERATION, handler),
        fixedSegment: new Map(),
      };
      this.compiled.set(handler, route);
    }
    return route;
  }
}

function routePath(route: unknown): string {
  const path = (route as { path?: unknown } | undefined)?.path;
  return typeof path === 'string' ? path : '';
}

function fixedType(path: string, version: FhirVersion): string | undefined {
  return path.split('/').find((segment) => isResourceType(version, segment));
}

function hasFixedSegment(route: CompiledRoute, path: string): boolean {
  let fixed = route.fixedSegment.get(path);
  if (fixed === undefined) {
    fixed = path
      .split('/')
      .slice(2)
      .some((segment) => segment !== '' && !segment.startsWith(':'));
    route.fixedSegment.set(path, fixed);
  }
  return fixed;
}
