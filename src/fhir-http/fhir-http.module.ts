import { Global, Module } from '@nestjs/common';
import { DiscoveryModule } from '@nestjs/core';
import { FhirReplyInterceptor } from './fhir-reply.interceptor';
import { FhirRouteGuard } from './fhir-route.guard';
import { OperationRegistry } from './operation-registry';

/** Global: every feature module declares FHIR routes with `@FhirRoute()` / `@FhirOperation()`. */
@Global()
@Module({
  imports: [DiscoveryModule],
  providers: [FhirRouteGuard, FhirReplyInterceptor, OperationRegistry],
  exports: [FhirRouteGuard, FhirReplyInterceptor, OperationRegistry],
})
export class FhirHttpModule {}
