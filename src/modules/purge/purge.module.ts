import { Module } from '@nestjs/common';
import { MongooseModule } from '@nestjs/mongoose';
import { PurgeController } from './purge.controller';
import { PurgeRepository } from './purge.repository';
import {
  PURGE_HISTORY_MODEL,
  PURGE_RESOURCE_MODEL,
  PurgeHistorySchema,
  PurgeResourceSchema,
} from './purge.schemas';
import { PurgeService } from './purge.service';

/** `DELETE /{v}/purge` (SPEC §4.7). Must come before FhirStoreModule in FEATURE_MODULES. */
@Module({
  imports: [
    MongooseModule.forFeature([
      { name: PURGE_RESOURCE_MODEL, schema: PurgeResourceSchema },
      { name: PURGE_HISTORY_MODEL, schema: PurgeHistorySchema },
    ]),
  ],
  controllers: [PurgeController],
  providers: [PurgeService, PurgeRepository],
})
export class PurgeModule {}
