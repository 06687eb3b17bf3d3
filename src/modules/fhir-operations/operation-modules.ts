import type { Type } from '@nestjs/common';
import { ValidateOperationModule } from './validate/validate-operation.module';

/** FHIR operation modules, one line each (docs/extending.md). */
export const OPERATION_MODULES: Type[] = [ValidateOperationModule];
