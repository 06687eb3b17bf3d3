import { Module } from '@nestjs/common';
import { ConditionalKeysRepository } from './conditional-keys.repository';
import { HistoryRepository } from './history.repository';
import { StoreMaintenanceRepository } from './maintenance.repository';
import { ReindexRepository } from './reindex.repository';
import { ResourceIdsRepository } from './resource-ids.repository';
import { ResourceRepository } from './resource.repository';
import { ResourceStorage } from './resource-storage';
import { EverythingReader } from './search/everything-reader';
import { IncludeResolver } from './search/include-resolver';
import { SearchExecutor } from './search/search-executor';
import { SubQueryResolver } from './search/sub-query-resolver';
import { ResourceWritesRepository } from './resource-writes.repository';
import { StorageService } from './storage-handle';
import { WriteProtocol } from './write-protocol';

/**
 * The resource collections and everything that reads or writes them (docs/storage.md): no
 * controllers. FHIR services take one request's `StorageService.for(ctx)` handle; export, purge
 * and the CLI build on `ResourceStorage.scoped(ctx)` or these repositories; none declares the
 * collections again.
 */
@Module({
  providers: [
    ResourceStorage,
    ResourceRepository,
    ResourceWritesRepository,
    WriteProtocol,
    StorageService,
    HistoryRepository,
    StoreMaintenanceRepository,
    ReindexRepository,
    ConditionalKeysRepository,
    ResourceIdsRepository,
    SubQueryResolver,
    IncludeResolver,
    SearchExecutor,
    EverythingReader,
  ],
  exports: [
    ResourceStorage,
    ResourceRepository,
    ResourceWritesRepository,
    WriteProtocol,
    StorageService,
    HistoryRepository,
    StoreMaintenanceRepository,
    ReindexRepository,
    ConditionalKeysRepository,
    ResourceIdsRepository,
    SearchExecutor,
    IncludeResolver,
    EverythingReader,
  ],
})
export class StorageModule {}
