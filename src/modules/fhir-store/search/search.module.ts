import { Module } from '@nestjs/common';
import { FhirStoreModule } from '../fhir-store.module';
import { EverythingService } from './everything.service';
import { ReindexService } from './reindex.service';
import { SearchRouteGuard } from './search-route.guard';
import { SearchController } from './search.controller';

/**
 * FHIR search (issue 5): type and system search, `_search`, includes, chains, `Patient/$everything`
 * and `store reindex`. Listed before FhirStoreModule in feature-modules.ts: Express matches routes in
 * registration order, and the store's generic `/{v}/{type}/{id}` routes must not shadow these.
 */
@Module({
  imports: [FhirStoreModule],
  controllers: [SearchController],
  providers: [EverythingService, SearchRouteGuard, ReindexService],
})
export class FhirSearchModule {}
