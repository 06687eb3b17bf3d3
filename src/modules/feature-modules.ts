import { LateFhirRoutesModule } from './fhir-store/search/compartment-search.module';
import type { DynamicModule, Type } from '@nestjs/common';
import { FhirHttpModule } from '../fhir-http/fhir-http.module';
import { TenancyModule } from '../tenancy/tenancy.module';
import { AuthModule } from './auth/auth.module';
import { AuthIdentityLookup } from './auth/identity-lookup.provider';
import { UsersModule } from './users/users.module';
import { MemberFederationModule } from './auth/member-federation/member-federation.module';
import { MemberLaunchModule } from './auth/member-launch/member-launch.module';
import { DirectoryModule } from './directory/directory.module';
import { FhirOperationsModule } from './fhir-operations/fhir-operations.module';
import { FhirRoutesModule } from './fhir-routes.module';

/**
 * The feature modules of the service. Each feature adds its module here in one line; AppModule
 * and the CLI context both load this list. The FHIR store's routes are ordered in one place,
 * FhirRoutesModule; operation modules come before it (their routes have a fixed `$name` segment
 * that the store's generic paths would otherwise take).
 */
export const FEATURE_MODULES: Array<Type | DynamicModule> = [
  FhirHttpModule,
  TenancyModule.register({ imports: [AuthModule, UsersModule], lookup: AuthIdentityLookup }),
  AuthModule,
  UsersModule,
  MemberFederationModule,
  MemberLaunchModule,
  DirectoryModule,
  FhirOperationsModule,
  FhirRoutesModule,
  LateFhirRoutesModule,
];
