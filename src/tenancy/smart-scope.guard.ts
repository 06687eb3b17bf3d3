import { CanActivate, ExecutionContext, Injectable } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { FHIR_OPERATION, type FhirOperationDefinition } from '../fhir-http/fhir-operation.decorator';
import type { FhirRequest } from '../fhir-http/fhir-route-state';
import {
  accessOf,
  allowsEverything,
  assertAllowed,
  insufficientScope,
  permissionOf,
  type Permission,
} from './smart-scopes';
import type { TenantRequest } from './tenant.guard';

/**
 * The SMART scope check of every FHIR route (`@FhirRoute()` puts it after the tenant guard): the
 * interaction the route is (from its method, its read/write kind and whether it names one
 * resource) must be allowed by some scope on the route's resource type, else 403. Which resources
 * of that type the scopes allow (a patient's compartment, a category) is decided where they are
 * read and written (storage/smart-access.ts); batch and transaction entries are checked one by
 * one (BundleService).
 */
@Injectable()
export class SmartScopeGuard implements CanActivate {
  constructor(private readonly reflector: Reflector) {}

  canActivate(context: ExecutionContext): boolean {
    const req = context.switchToHttp().getRequest<TenantRequest & FhirRequest>();
    const ctx = req.tenant;
    const route = req.fhir;
    if (!ctx || !route) return true;
    const operation = this.reflector.get<FhirOperationDefinition | undefined>(
      FHIR_OPERATION,
      context.getHandler(),
    );
    const method = req.method.toUpperCase();
    const path = routePath(req.route);
    // purge and `DELETE Patient/{id}/$everything` remove everything of a record at once
    if (operation?.name === 'purge' || (method === 'DELETE' && path.endsWith('/$everything'))) {
      assertAllowed(ctx, 'd', undefined, true);
      return true;
    }
    // Bulk Data export: a `user/` or `system/` scope that reads every resource (the export does
    // not go through the scopes resource by resource)
    if (operation?.name === 'export') {
      if (!allowsEverything(accessOf(ctx), 'r'))
        throw insufficientScope('$export needs a user/ or system/ scope that reads every resource type');
      return true;
    }
    // a batch or transaction: its entries are checked one by one
    if (route.type === undefined && method === 'POST' && route.options.kind !== 'read') return true;
    const params = req.params as Record<string, string | undefined>;
    const instance = route.id !== undefined && params.compartment === undefined;
    const read = route.options.kind === 'read' || method === 'GET' || method === 'HEAD';
    const permission: Permission = read ? (instance ? 'r' : 's') : permissionOf(method, instance);
    assertAllowed(ctx, permission, route.type);
    return true;
  }
}

function routePath(route: unknown): string {
  const path = (route as { path?: unknown } | undefined)?.path;
  return typeof path === 'string' ? path : '';
}
