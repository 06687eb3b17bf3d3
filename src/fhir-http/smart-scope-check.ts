import {
  accessOf,
  allowsEverything,
  assertAllowed,
  insufficientScope,
  permissionOf,
  type Permission,
} from '../tenancy/smart-scopes';
import type { TenantContext } from '../tenancy/tenant-context';
import type { FhirOperationDefinition } from './fhir-operation-definition';
import type { FhirRouteState } from './fhir-route-state';

/** What the scope check needs to know of a request besides its route state. */
export interface ScopedRequest {
  method: string;
  /** The Express route's path (`/:version/:type/:id` …). */
  routePath: string;
  /** The `:compartment` of a compartment search, if any. */
  compartment?: string;
}

/**
 * The SMART scope check of every FHIR route (after the credentials are resolved): the interaction
 * the route is (from its method, its read/write kind and whether it names one resource) must be
 * allowed by some scope on the route's resource type, else 403. Which resources of that type the
 * scopes allow (a patient's compartment, a category) is decided where they are read and written
 * (storage/smart-access.ts); batch and transaction entries are checked one by one (BundleService).
 */
export function checkSmartScopes(
  ctx: TenantContext,
  route: FhirRouteState,
  operation: FhirOperationDefinition | undefined,
  req: ScopedRequest,
): void {
  const method = req.method.toUpperCase();
  // purge and `DELETE Patient/{id}/$everything` remove everything of a record at once
  if (operation?.name === 'purge' || (method === 'DELETE' && req.routePath.endsWith('/$everything'))) {
    assertAllowed(ctx, 'd', undefined, true);
    return;
  }
  // Bulk Data export: a `user/` or `system/` scope that reads every resource (the export does
  // not go through the scopes resource by resource)
  if (operation?.name === 'export') {
    if (!allowsEverything(accessOf(ctx), 'r'))
      throw insufficientScope('$export needs a user/ or system/ scope that reads every resource type');
    return;
  }
  // a batch or transaction: its entries are checked one by one
  if (route.type === undefined && method === 'POST' && route.options.kind !== 'read') return;
  const instance = route.id !== undefined && req.compartment === undefined;
  const read = route.options.kind === 'read' || method === 'GET' || method === 'HEAD';
  const permission: Permission = read ? (instance ? 'r' : 's') : permissionOf(method, instance);
  assertAllowed(ctx, permission, route.type);
}
