import { Global, Module } from '@nestjs/common';
import { DiscoveryModule } from '@nestjs/core';
import { FhirRouteGuard } from './fhir-route.guard';
import { OperationRegistry } from './operation-registry';

/** Global: every feature module declares FHIR routes with `@FhirRoute()` / `@FhirOperation()`. */
@Global()
@Module({
  imports: [DiscoveryModule],
  providers: [FhirRouteGuard, OperationRegistry],
  exports: [FhirRouteGuard, OperationRegistry],
})
export class FhirHttpModule {}
