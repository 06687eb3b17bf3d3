import type { TenantContext } from '../tenancy/tenant-context';

/**
 * The user a request is charged to within its client (docs/security.md "The cost budget"): the
 * service user it acts as, or '' when it acts as the client itself (a client token, all users).
 * Bearer tokens are per user, and client-header credentials name the user in x-service-user-id or
 * x-app-user-id, so one end user's flood is charged to that user first.
 */
export function userOf(ctx: Pick<TenantContext, 'userId'>): string {
  return ctx.userId === null ? '' : String(ctx.userId);
}
