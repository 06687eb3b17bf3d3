import { Module } from '@nestjs/common';
import { PurgeRepository } from './purge.repository';
import { PurgeService } from './purge.service';
import { StorageModule } from '../../storage/storage.module';

/** `DELETE /{v}/purge`: removal of a user's resources for good (routes: fhir-routes.module.ts). */
@Module({
  imports: [StorageModule],
  providers: [PurgeService, PurgeRepository],
  exports: [PurgeService],
})
export class PurgeModule {}
