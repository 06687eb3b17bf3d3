import { Module } from '@nestjs/common';
import { FhirPathSandbox } from '@app/fhir';
import { SETTINGS } from '../../config/config.module';
import type { Settings } from '../../config/settings';
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
    {
      // callers' FHIRPath runs in worker threads with a time bound (docs/security.md)
      provide: FhirPathSandbox,
      inject: [SETTINGS],
      useFactory: (settings: Settings) =>
        new FhirPathSandbox({
          timeoutMs: settings.fhirpathTimeoutMs,
          workers: settings.fhirpathWorkers,
          maxQueue: settings.fhirpathMaxQueue,
          maxHeapMb: 256,
        }),
    },
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
