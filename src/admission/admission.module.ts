import { Module } from '@nestjs/common';
import { ClientConcurrency } from './client-concurrency';
import { EventLoopTime } from './event-loop-time';
import { FhirAdmission } from './fhir-admission';
import { FhirPathTurns } from './fhirpath-turns';
import { KnownCredentials } from './known-credentials';
import { RequestAdmission } from './request-admission';

/** Request admission and per-caller shares: who may run now, how much each caller is served, and fair turns on shared pools. */
@Module({
  providers: [
    ClientConcurrency,
    RequestAdmission,
    FhirAdmission,
    KnownCredentials,
    FhirPathTurns,
    EventLoopTime,
  ],
  exports: [
    FhirAdmission,
    ClientConcurrency,
    RequestAdmission,
    KnownCredentials,
    FhirPathTurns,
    EventLoopTime,
  ],
})
export class AdmissionModule {}
