import { Module } from '@nestjs/common';
import { BundleService } from './bundle.service';
import { ConditionalService } from './conditional.service';
import { FhirRouteGuard } from './fhir-route.guard';
import { FhirStoreController } from './fhir-store.controller';
import { FhirStoreService } from './fhir-store.service';
import { HistoryRepository } from './history.repository';
import { HistoryService } from './history.service';
import { PatchService } from './patch.service';
import { ResourceRepository } from './resource.repository';
import { ResourceWriter } from './resource-writer';
import { StoreCheckService } from './store-check.service';
import { StoreMaintenanceRepository } from './store-maintenance.repository';

/**
 * The FHIR store (issue 4): versions, CRUD, history, deletes, transaction/batch bundles, basic
 * search. Exports the repository and services the search, export and purge modules build on.
 */
@Module({
  controllers: [FhirStoreController],
  providers: [
    ResourceRepository,
    ResourceWriter,
    FhirStoreService,
    BundleService,
    FhirRouteGuard,
    StoreCheckService,
    StoreMaintenanceRepository,
    HistoryRepository,
    HistoryService,
    ConditionalService,
    PatchService,
  ],
  exports: [
    ResourceRepository,
    ResourceWriter,
    FhirStoreService,
    HistoryService,
    FhirRouteGuard,
    ConditionalService,
    PatchService,
  ],
})
export class FhirStoreModule {}
