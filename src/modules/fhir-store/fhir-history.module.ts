import { Module } from '@nestjs/common';
import { FhirStoreModule } from './fhir-store.module';
import { HistoryController } from './history.controller';

/**
 * History routes on their own, listed before the search and store modules in feature-modules.ts
 * (Express matches in registration order): `/{v}/_history` and `/{v}/{type}/_history` must not be
 * taken for a type search or a read of the id `_history`.
 */
@Module({ imports: [FhirStoreModule], controllers: [HistoryController] })
export class FhirHistoryModule {}
