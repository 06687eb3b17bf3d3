import { Module } from '@nestjs/common';
import { FhirStoreModule } from '../fhir-store.module';
import { EverythingService } from './everything.service';
import { ReindexService } from './reindex.service';

/**
 * FHIR search: type and system search, `_search`, includes, chains, `Patient/$everything` and
 * `store reindex`. Its routes are declared in src/modules/fhir-routes.module.ts.
 */
@Module({
  imports: [FhirStoreModule],
  providers: [EverythingService, ReindexService],
  exports: [EverythingService],
})
export class FhirSearchModule {}
