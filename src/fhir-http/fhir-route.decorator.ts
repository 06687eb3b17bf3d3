import { applyDecorators, SetMetadata, UseGuards } from '@nestjs/common';
import { ApiNotAcceptableResponse, ApiNotFoundResponse } from '@nestjs/swagger';
import { TenantDocs } from '../tenancy/use-tenant.decorator';
import {
  FHIR_HANDLER,
  FHIR_ROUTE,
  type ControllerClass,
  type FhirHandlerSite,
  type FhirRouteOptions,
  type RouteHandler,
} from './fhir-route-state';
import { FhirRouteGuard } from './fhir-route.guard';

/**
 * Declares a FHIR route, on a handler: the version, type and id of the path are checked once
 * (before the credentials), then the tenant (read or write), its admission and its SMART scopes,
 * all by FhirRouteGuard, and what the handler returns is
 * written by `writeFhirReply` (fhir-reply.ts, called by the app's FhirExpressAdapter); errors
 * answer OperationOutcomes. Take the checked values with
 * `@FhirVersionParam()`, `@FhirTypeParam()`, `@FhirIdParam()`, `@FhirSearchParams()`, or, on the
 * routes of one resource, all of them with the tenant as one parameter, `@FhirInstanceParam()`.
 */
export function FhirRoute(options: FhirRouteOptions = {}): MethodDecorator {
  const decorators = [SetMetadata(FHIR_ROUTE, options), UseGuards(FhirRouteGuard), handlerSite];
  // the credentials, admission and SMART scopes are checked by FhirRouteGuard; Swagger lists the forms
  if (options.tenant !== false) decorators.push(TenantDocs(options.tenant ?? {}));
  decorators.push(
    ApiNotFoundResponse({ description: 'unknown FHIR version or resource type (OperationOutcome)' }),
    ApiNotAcceptableResponse({ description: 'XML or another non-JSON format asked for (OperationOutcome)' }),
  );
  return applyDecorators(...decorators);
}

/** Records on the handler where it is defined (FHIR_HANDLER), for the compiled FHIR route. */
function handlerSite(target: object, key: string | symbol, descriptor: PropertyDescriptor): void {
  defineHandlerSite(descriptor.value as RouteHandler, target, String(key));
}

/** `handlerSite` for a handler defined by other means (an operation's twin for a second method). */
export function defineHandlerSite(handler: RouteHandler, prototype: object, method: string): void {
  const site: FhirHandlerSite = {
    controller: (prototype as { constructor: ControllerClass }).constructor,
    method,
  };
  Reflect.defineMetadata(FHIR_HANDLER, site, handler);
}
