import { Module } from '@nestjs/common';
import { ClientConcurrency } from './client-concurrency';
import { FhirAdmission } from './fhir-admission';
import { KnownCredentials } from './known-credentials';
import { RequestAdmission } from './request-admission';

/** Request admission and per-client shares: who may run now, and how much each client is served. */
@Module({
  providers: [ClientConcurrency, RequestAdmission, FhirAdmission, KnownCredentials],
  exports: [FhirAdmission, ClientConcurrency, RequestAdmission, KnownCredentials],
})
export class AdmissionModule {}
