import { Injectable } from '@nestjs/common';
import type { FhirVersion } from '@app/fhir';
import type { TenantContext } from '../../../tenancy/tenant-context';
import { FhirStoreService } from '../../fhir-store/fhir-store.service';

@Injectable()
export class MetaService {
  constructor(private readonly store: FhirStoreService) {}

  /** https://hl7.org/fhir/R4/resource-operation-meta.html: Parameters with one `return`. */
  async meta(ctx: TenantContext, version: FhirVersion, type: string, id: string) {
    const { doc } = await this.store.read(ctx, version, type, id);
    const resource = JSON.parse(doc.json ?? '{}') as { meta?: object };
    return {
      resourceType: 'Parameters',
      parameter: [{ name: 'return', valueMeta: resource.meta ?? {} }],
    };
  }
}
