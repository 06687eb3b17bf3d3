import { Module } from '@nestjs/common';
import { FhirPathSandbox } from '@app/fhir';
import { SETTINGS } from '../../config/config.module';
import type { Settings } from '../../config/settings';
import { BundleService } from './bundle.service';
import { ConditionalService } from './conditional.service';
import { FhirStoreService } from './fhir-store.service';
import { HistoryService } from './history.service';
import { PatchService } from './patch.service';
import { StoreCheckService } from './store-check.service';
import { SearchService } from './search/search.service';
import { StorageModule } from '../../storage/storage.module';
import { AdmissionModule } from '../../admission/admission.module';

/**
 * The FHIR store: versions, CRUD, history, deletes, transaction/batch bundles, and the execution
 * of searches (SearchService), which conditional interactions and batch entries call like the
 * search routes do. Exports what the search, export and purge modules build on. Its routes are
 * declared with the other FHIR controllers, in one order (src/modules/fhir-routes.module.ts).
 */
@Module({
  imports: [StorageModule, AdmissionModule],
  providers: [
    FhirStoreService,
    BundleService,
    StoreCheckService,
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
    SearchService,
  ],
  exports: [
    BundleService,
    StorageModule,
    FhirStoreService,
    HistoryService,
    ConditionalService,
    PatchService,
    SearchService,
  ],
})
export class FhirStoreModule {}
