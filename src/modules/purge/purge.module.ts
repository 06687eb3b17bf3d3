import { Module } from '@nestjs/common';
import { MongooseModule } from '@nestjs/mongoose';
import { PurgeRepository } from './purge.repository';
import {
  PURGE_HISTORY_MODEL,
  PURGE_RESOURCE_MODEL,
  PurgeHistorySchema,
  PurgeResourceSchema,
} from './purge.schemas';
import { PurgeService } from './purge.service';

/** `DELETE /{v}/purge`: removal of a user's resources for good (routes: fhir-routes.module.ts). */
@Module({
  imports: [
    MongooseModule.forFeature([
      { name: PURGE_RESOURCE_MODEL, schema: PurgeResourceSchema },
      { name: PURGE_HISTORY_MODEL, schema: PurgeHistorySchema },
    ]),
  ],
  providers: [PurgeService, PurgeRepository],
  exports: [PurgeService],
})
export class PurgeModule {}
