export * from './tenant-context';
export { TenantGuard, TENANT_OPTIONS } from './tenant.guard';
export type { TenantRequest } from './tenant.guard';
export { TenantResolver } from './tenant-resolver';
export type { TenantOptions } from './tenant-options';
export { UseTenant, Tenant } from './use-tenant.decorator';
export { IDENTITY_LOOKUP } from './identity-lookup';
export type { IdentityLookup, TenantClient, AccessTokenClaims } from './identity-lookup';
