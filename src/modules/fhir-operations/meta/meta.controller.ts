import { Controller } from '@nestjs/common';
import type { FhirVersion } from '@app/fhir';
import { FhirIdParam, FhirOperation, FhirTypeParam, FhirVersionParam } from '../../../fhir-http';
import { Tenant } from '../../../tenancy/use-tenant.decorator';
import type { TenantContext } from '../../../tenancy/tenant-context';
import { MetaService } from './meta.service';

@Controller()
export class MetaController {
  constructor(private readonly service: MetaService) {}

  @FhirOperation({
    name: 'meta',
    levels: ['instance'],
    definition: 'http://hl7.org/fhir/OperationDefinition/Resource-meta',
    description: 'the meta of a resource: versionId, lastUpdated, profiles, tags, security labels',
  })
  meta(
    @Tenant() ctx: TenantContext,
    @FhirVersionParam() version: FhirVersion,
    @FhirTypeParam() type: string,
    @FhirIdParam() id: string,
  ) {
    return this.service.meta(ctx, version, type, id);
  }
}
