import type { Type } from '@nestjs/common';
import { BulkExportModule } from './bulk-export/bulk-export.module';
import { TenancyModule } from '../tenancy/tenancy.module';
import { AuthModule } from './auth/auth.module';
import { UsersModule } from './users/users.module';
import { DirectoryModule } from './directory/directory.module';
import { FhirOperationsModule } from './fhir-operations/fhir-operations.module';
import { FhirStoreModule } from './fhir-store/fhir-store.module';
import { FhirCapabilityModule } from './fhir-store/fhir-capability.module';
import { FhirHistoryModule } from './fhir-store/fhir-history.module';
import { FhirSearchModule } from './fhir-store/search/search.module';
import { PurgeModule } from './purge/purge.module';

/**
 * The feature modules of the service (DESIGN.md §2). Each feature adds its module here in one
 * line; AppModule and the CLI context both load this list.
 *
 * ORDER MATTERS: Express matches routes in registration order, and the FHIR store's generic
 * routes (`/:version/:type/:id`) would otherwise swallow specific ones (`DELETE /r4/purge`,
 * `/r4/Patient/$everything`, `/r4/$export`). Modules with specific FHIR paths come first;
 * FhirStoreModule stays LAST.
 */
export const FEATURE_MODULES: Type[] = [
  TenancyModule,
  AuthModule,
  UsersModule,
  DirectoryModule,
  FhirCapabilityModule,
  FhirHistoryModule,
  FhirOperationsModule,
  BulkExportModule,
  PurgeModule,
  FhirSearchModule,
  FhirStoreModule,
];
