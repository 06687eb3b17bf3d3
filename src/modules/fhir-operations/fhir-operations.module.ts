import { Module } from '@nestjs/common';
import { OPERATION_MODULES } from './operation-modules';

/** Groups the FHIR operation modules; registered before the FHIR store (route order). */
@Module({ imports: OPERATION_MODULES })
export class FhirOperationsModule {}
