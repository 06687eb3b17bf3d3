import { Global, Module } from '@nestjs/common';
import { AuthModule } from '../modules/auth/auth.module';
import { UsersModule } from '../modules/users/users.module';
import { ClientConcurrency } from './client-concurrency';
import { RequestAdmission } from './request-admission';
import { TenantGuard } from './tenant.guard';
import { TenantResolver } from './tenant-resolver';

/**
 * Global: any module can put `@UseTenant()` on its routes without importing anything. Re-exports
 * AuthModule (ClientsService, TokenService) and UsersModule (UsersService) for the same reason.
 */
@Global()
@Module({
  imports: [AuthModule, UsersModule],
  providers: [TenantResolver, TenantGuard, ClientConcurrency, RequestAdmission],
  exports: [TenantResolver, TenantGuard, ClientConcurrency, RequestAdmission, AuthModule, UsersModule],
})
export class TenancyModule {}
