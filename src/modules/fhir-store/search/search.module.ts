import { Module } from '@nestjs/common';
import { FhirStoreModule } from '../fhir-store.module';
import { EverythingService } from './everything.service';
import { IncludeResolver } from './include-resolver';
import { ReindexRepository } from './reindex.repository';
import { ReindexService } from './reindex.service';
import { SearchService } from './search.service';
import { SubQueryResolver } from './sub-query-resolver';

/**
 * FHIR search: type and system search, `_search`, includes, chains, `Patient/$everything` and
 * `store reindex`. Its routes are declared in src/modules/fhir-routes.module.ts.
 */
@Module({
  imports: [FhirStoreModule],
  providers: [
    SearchService,
    SubQueryResolver,
    IncludeResolver,
    EverythingService,
    ReindexRepository,
    ReindexService,
  ],
  exports: [SearchService, EverythingService],
})
export class FhirSearchModule {}
