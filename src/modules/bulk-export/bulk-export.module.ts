import { Module } from '@nestjs/common';
import { MongooseModule } from '@nestjs/mongoose';
import { SETTINGS } from '../../config/config.module';
import { Settings } from '../../config/settings';
import { BulkExportService } from './bulk-export.service';
import { EXPORT_JOB_MODEL, ExportJobSchema, ExportJobsRepository } from './export-jobs.repository';
import { ExportPlanner } from './export-planner';
import { ExportResourcesRepository } from './export-resources.repository';
import { StorageModule } from '../../storage/storage.module';
import { EXPORT_SIGNING_KEY, exportSigningKey } from './export-signing-key';

/** Bulk export: sync manifests, async jobs, signed NDJSON file links (routes: fhir-routes.module.ts). */
@Module({
  imports: [StorageModule, MongooseModule.forFeature([{ name: EXPORT_JOB_MODEL, schema: ExportJobSchema }])],
  providers: [
    {
      provide: EXPORT_SIGNING_KEY,
      inject: [SETTINGS],
      useFactory: (settings: Settings) => exportSigningKey(settings),
    },
    ExportResourcesRepository,
    ExportJobsRepository,
    ExportPlanner,
    BulkExportService,
  ],
  exports: [BulkExportService],
})
export class BulkExportModule {}
