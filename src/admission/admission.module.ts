import { Module } from '@nestjs/common';
import { ClientConcurrency } from './client-concurrency';
import { FhirAdmission } from './fhir-admission';
import { RequestAdmission } from './request-admission';

/** Request admission and per-client shares: who may run now, and how much each client is served. */
@Module({
  providers: [ClientConcurrency, RequestAdmission, FhirAdmission],
  exports: [FhirAdmission, ClientConcurrency, RequestAdmission],
})
export class AdmissionModule {}
