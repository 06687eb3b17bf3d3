import { Module } from '@nestjs/common';
import { MongooseModule } from '@nestjs/mongoose';
import { AuthModule } from '../auth/auth.module';
import { ClinicalSystemsController } from './clinical-systems.controller';
import { ClinicalClientGuard } from './clinical-client.guard';
import { DIRECTORY_ENTRY_MODEL, DirectoryEntrySchema } from './directory-entry.schema';
import { DirectoryFhirController } from './directory-fhir.controller';
import { DirectoryFhirService } from './directory-fhir.service';
import { DirectorySearchController } from './directory-search.controller';
import { DirectorySeeder } from './directory-seeder';
import { DirectoryRepository } from './directory.repository';
import { DirectoryService } from './directory.service';

/** Provider/health-system directory: /api/search, /connect/system/clinical, /directory/r4, import, seed. */
@Module({
  imports: [
    AuthModule,
    MongooseModule.forFeature([{ name: DIRECTORY_ENTRY_MODEL, schema: DirectoryEntrySchema }]),
  ],
  controllers: [DirectorySearchController, ClinicalSystemsController, DirectoryFhirController],
  providers: [
    DirectoryRepository,
    DirectoryService,
    DirectoryFhirService,
    ClinicalClientGuard,
    DirectorySeeder,
  ],
  exports: [DirectoryService],
})
export class DirectoryModule {}
