import { Module, type Type } from '@nestjs/common';
import { BulkExportController } from './bulk-export/bulk-export.controller';
import { BulkExportModule } from './bulk-export/bulk-export.module';
import { CapabilityController } from './fhir-store/capability.controller';
import { CapabilityService } from './fhir-store/capability.service';
import { FhirStoreController } from './fhir-store/fhir-store.controller';
import { FhirStoreModule } from './fhir-store/fhir-store.module';
import { HistoryController } from './fhir-store/history.controller';
import { SearchController } from './fhir-store/search/search.controller';
import { FhirSearchModule } from './fhir-store/search/search.module';
import { PurgeController } from './purge/purge.controller';
import { PurgeModule } from './purge/purge.module';

/**
 * Every FHIR controller of the store's base, in the one order Express tries their routes: fixed
 * paths (`metadata`, `_history`, `$export`, `purge`, `_search`, `$everything`) before the store's
 * generic `/{v}/{type}/{id}`, which would match them too. test/fhir-route-order.e2e-spec.ts checks
 * that no route is shadowed by an earlier one. Operation modules (FhirOperationsModule) are loaded
 * before this module: each operation path has its fixed `$name` segment.
 */
export const FHIR_CONTROLLERS: Type[] = [
  CapabilityController,
  HistoryController,
  BulkExportController,
  PurgeController,
  SearchController,
  FhirStoreController,
];

/** The FHIR routes; the behaviour lives in the feature modules it imports. */
@Module({
  imports: [FhirStoreModule, FhirSearchModule, BulkExportModule, PurgeModule],
  controllers: FHIR_CONTROLLERS,
  providers: [CapabilityService],
})
export class FhirRoutesModule {}
