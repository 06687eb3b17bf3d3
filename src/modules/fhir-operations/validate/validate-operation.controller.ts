import { Body, Controller } from '@nestjs/common';
import { ApiBody, ApiOkResponse, ApiTags } from '@nestjs/swagger';
import type { FhirVersion } from '@app/fhir';
import { FhirIdParam, FhirOperation, FhirTypeParam, FhirVersionParam } from '../../../fhir-http';
import type { TenantContext } from '../../../tenancy/tenant-context';
import { Tenant } from '../../../tenancy/use-tenant.decorator';
import { ValidateOperationService } from './validate-operation.service';

/**
 * `$validate` (https://hl7.org/fhir/R4/resource-operation-validate.html) at type and instance
 * level. It stores nothing: a read-only token may use it.
 */
@ApiTags('FHIR operations')
@Controller()
export class ValidateOperationController {
  constructor(private readonly service: ValidateOperationService) {}

  @FhirOperation({
    name: 'validate',
    levels: ['type', 'instance'],
    methods: ['POST'],
    definition: 'http://hl7.org/fhir/OperationDefinition/Resource-validate',
    description: 'Validates a resource against the base specification of the version; stores nothing.',
  })
  @ApiBody({ description: 'The resource, or a Parameters resource with resource/mode/profile' })
  @ApiOkResponse({ description: 'OperationOutcome with every issue found (information when valid)' })
  validate(
    @FhirVersionParam() version: FhirVersion,
    @FhirTypeParam() type: string,
    @FhirIdParam('optional') id: string | undefined,
    @Body() body: unknown,
    @Tenant() ctx: TenantContext,
  ) {
    return this.service.validate(version, type, body, id, ctx);
  }
}
