import { applyDecorators, SetMetadata, UseGuards, UseInterceptors } from '@nestjs/common';
import { ApiNotAcceptableResponse, ApiNotFoundResponse } from '@nestjs/swagger';
import { SmartScopeGuard } from '../tenancy/smart-scope.guard';
import { UseTenant } from '../tenancy/use-tenant.decorator';
import { FHIR_ROUTE, type FhirRouteOptions } from './fhir-route-state';
import { FhirAdmissionGuard } from './fhir-admission.guard';
import { FhirReplyInterceptor } from './fhir-reply.interceptor';
import { FhirRouteGuard } from './fhir-route.guard';

/**
 * Declares a FHIR route, on a handler: the version, type and id of the path are checked once
 * (FhirRouteGuard, before the credentials), then the tenant (read or write), its admission
 * (FhirAdmissionGuard) and its SMART scopes (SmartScopeGuard), and the answer is
 * written by FhirReplyInterceptor; errors answer OperationOutcomes. Take the checked values with
 * `@FhirVersionParam()`, `@FhirTypeParam()`, `@FhirIdParam()`, `@FhirSearchParams()`.
 */
export function FhirRoute(options: FhirRouteOptions = {}): MethodDecorator {
  const decorators = [SetMetadata(FHIR_ROUTE, options), UseGuards(FhirRouteGuard)];
  if (options.tenant !== false) {
    decorators.push(
      UseTenant({ ...(options.tenant ?? {}), readRoute: options.kind === 'read' }),
      // the resolved caller's slot and its turn in the route's lane
      UseGuards(FhirAdmissionGuard),
      // after the tenant guard: the SMART scopes of the resolved context allow this interaction
      UseGuards(SmartScopeGuard),
    );
  }
  decorators.push(
    UseInterceptors(FhirReplyInterceptor),
    ApiNotFoundResponse({ description: 'unknown FHIR version or resource type (OperationOutcome)' }),
    ApiNotAcceptableResponse({ description: 'XML or another non-JSON format asked for (OperationOutcome)' }),
  );
  return applyDecorators(...decorators);
}
