import { Module } from '@nestjs/common';
import { PurgeController } from './purge.controller';
import { PurgeRepository } from './purge.repository';
import { PurgeService } from './purge.service';
import { StorageModule } from '../../storage/storage.module';

/** `DELETE /{v}/purge` (SPEC §4.7). Must come before FhirStoreModule in FEATURE_MODULES. */
@Module({
  imports: [StorageModule],
  controllers: [PurgeController],
  providers: [PurgeService, PurgeRepository],
})
export class PurgeModule {}
