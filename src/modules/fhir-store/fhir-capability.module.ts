import { Module } from '@nestjs/common';
import { CapabilityController } from './capability.controller';
import { CapabilityService } from './capability.service';
import { FhirRouteGuard } from './fhir-route.guard';

/**
 * `GET /{v}/metadata` on its own, registered before every module with generic FHIR paths
 * (src/modules/feature-modules.ts): `/:version/:type` would otherwise take `metadata` for a type.
 */
@Module({ controllers: [CapabilityController], providers: [FhirRouteGuard, CapabilityService] })
export class FhirCapabilityModule {}
