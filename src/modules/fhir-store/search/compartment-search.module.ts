import { Module } from '@nestjs/common';
import { FhirStoreModule } from '../fhir-store.module';
import { CompartmentSearchController } from './compartment-search.controller';

/** The compartment search route (see its controller for why it is registered last). */
@Module({
  imports: [FhirStoreModule],
  controllers: [CompartmentSearchController],
})
export class CompartmentSearchModule {}

/**
 * Nest registers the routes of modules imported further from the root later; operation modules sit
 * two imports down (FhirOperationsModule → each operation), so the compartment search, a path of
 * parameters only, hangs three down: after every operation path (test/fhir-route-order.e2e-spec.ts).
 */
@Module({ imports: [CompartmentSearchModule] })
class CompartmentSearchDepthModule {}

@Module({ imports: [CompartmentSearchDepthModule] })
export class LateFhirRoutesModule {}
