import { DynamicModule, Module, type Type } from '@nestjs/common';
import { AdmissionModule } from '../admission/admission.module';
import { BearerCredential } from './bearer-credential';
import { IDENTITY_LOOKUP, type IdentityLookup } from './identity-lookup';
import { TenantGuard } from './tenant.guard';
import { TenantResolver } from './tenant-resolver';

/**
 * Global: any module can put `@UseTenant()` on its routes without importing anything. Tenancy
 * knows clients, tokens and users only through the IdentityLookup the identity side provides
 * (`register`), so no tenancy file imports a feature module.
 */
@Module({})
export class TenancyModule {
  static register(identity: { imports: Type[]; lookup: Type<IdentityLookup> }): DynamicModule {
    return {
      module: TenancyModule,
      global: true,
      imports: [...identity.imports, AdmissionModule],
      providers: [
        { provide: IDENTITY_LOOKUP, useClass: identity.lookup },
        {
          provide: BearerCredential,
          inject: [IDENTITY_LOOKUP],
          useFactory: (lookup: IdentityLookup) => new BearerCredential(lookup),
        },
        TenantResolver,
        TenantGuard,
      ],
      exports: [TenantResolver, TenantGuard, AdmissionModule],
    };
  }
}
