import { DynamicModule, Module, type Type } from '@nestjs/common';
import { ClientConcurrency } from './client-concurrency';
import { IDENTITY_LOOKUP, type IdentityLookup } from './identity-lookup';
import { RequestAdmission } from './request-admission';
import { TenantGuard } from './tenant.guard';
import { TenantResolver } from './tenant-resolver';

/**
 * Global: any module can put `@UseTenant()` on its routes without importing anything. Tenancy
 * knows clients, tokens and users only through the IdentityLookup the identity side provides
 * (`register`), so it imports no feature module.
 */
@Module({})
export class TenancyModule {
  static register(identity: { imports: Type[]; lookup: Type<IdentityLookup> }): DynamicModule {
    return {
      module: TenancyModule,
      global: true,
      imports: identity.imports,
      providers: [
        { provide: IDENTITY_LOOKUP, useClass: identity.lookup },
        TenantResolver,
        TenantGuard,
        ClientConcurrency,
        RequestAdmission,
      ],
      exports: [TenantResolver, TenantGuard, ClientConcurrency, RequestAdmission],
    };
  }
}
