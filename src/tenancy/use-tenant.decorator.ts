import {
  applyDecorators,
  createParamDecorator,
  ExecutionContext,
  SetMetadata,
  UseGuards,
} from '@nestjs/common';
import {
  ApiBadRequestResponse,
  ApiBearerAuth,
  ApiForbiddenResponse,
  ApiNotFoundResponse,
  ApiSecurity,
  ApiUnauthorizedResponse,
} from '@nestjs/swagger';
import { SECURITY } from './security-schemes';
import { TenantContext } from './tenant-context';
import { TENANT_OPTIONS, TenantGuard, TenantRequest } from './tenant.guard';
import { TenantOptions } from './tenant-resolver';

/**
 * Declares that a route (or every route of a controller) needs a tenant, and documents the
 * credential forms of docs/api.md §2 in Swagger: a bearer token, or client_id + client_secret with
 * x-service-user-id or x-app-user-id.
 */
export function UseTenant(opts: TenantOptions = {}): MethodDecorator & ClassDecorator {
  return applyDecorators(SetMetadata(TENANT_OPTIONS, opts), UseGuards(TenantGuard), TenantDocs(opts));
}

/** The credential forms a route takes, in Swagger (FHIR routes check them in FhirRouteGuard). */
export function TenantDocs(opts: Omit<TenantOptions, 'readRoute'> = {}): MethodDecorator & ClassDecorator {
  const decorators = [
    ApiBearerAuth(SECURITY.bearer),
    ApiUnauthorizedResponse({
      description: 'missing, invalid or expired credentials (WWW-Authenticate: Bearer)',
    }),
    ApiForbiddenResponse({
      description:
        'the token scope is read-only (e.g. user/*.rs) and this is a write, or its SMART scopes do not allow this interaction',
    }),
    ApiNotFoundResponse({
      description: 'the user named by x-service-user-id / x-app-user-id is not in this client',
    }),
    ApiBadRequestResponse({ description: 'bad user header, or client-wide access where one user is needed' }),
  ];
  if (!opts.bearerOnly) {
    decorators.push(
      ApiSecurity({ [SECURITY.clientId]: [], [SECURITY.clientSecret]: [], [SECURITY.serviceUserId]: [] }),
      ApiSecurity({ [SECURITY.clientId]: [], [SECURITY.clientSecret]: [], [SECURITY.appUserId]: [] }),
    );
  }
  return applyDecorators(...decorators);
}

/** The `TenantContext` the guard resolved for this request. */
export const Tenant = createParamDecorator((_data: unknown, context: ExecutionContext): TenantContext => {
  const tenant = context.switchToHttp().getRequest<TenantRequest>().tenant;
  if (!tenant) throw new Error('@Tenant() used on a route without @UseTenant()');
  return tenant;
});
