import { Module } from '@nestjs/common';
import { ValidateOperationModule } from './validate/validate-operation.module';
import { MetaModule } from './meta/meta.module';

/**
 * The FHIR operation modules, one import each; `nest g module modules/fhir-operations/<name>`
 * adds a new one here (docs/extending.md). Loaded before the FHIR store's routes: an operation's
 * fixed `$name` segment would otherwise be taken for an id.
 */
@Module({
  imports: [ValidateOperationModule, MetaModule],
})
export class FhirOperationsModule {}
