import { Module } from '@nestjs/common';
import { BundleService } from './bundle.service';
import { ConditionalService } from './conditional.service';
import { FhirStoreService } from './fhir-store.service';
import { HistoryRepository } from './history.repository';
import { HistoryService } from './history.service';
import { PatchService } from './patch.service';
import { ResourceRepository } from './resource.repository';
import { ResourceWriter } from './resource-writer';
import { StoreCheckService } from './store-check.service';
import { StoreMaintenanceRepository } from './store-maintenance.repository';

/**
 * The FHIR store: versions, CRUD, history, deletes, transaction/batch bundles. Exports the
 * repository and services the search, export and purge modules build on. Its routes are declared
 * with the other FHIR controllers, in one order (src/modules/fhir-routes.module.ts).
 */
@Module({
  providers: [
    ResourceRepository,
    ResourceWriter,
    FhirStoreService,
    BundleService,
    StoreCheckService,
    StoreMaintenanceRepository,
    HistoryRepository,
    HistoryService,
    ConditionalService,
    PatchService,
  ],
  exports: [
    BundleService,
    ResourceRepository,
    ResourceWriter,
    FhirStoreService,
    HistoryService,
    ConditionalService,
    PatchService,
  ],
})
export class FhirStoreModule {}
