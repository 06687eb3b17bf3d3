import { Global, Module } from '@nestjs/common';
import { AuthModule } from '../modules/auth/auth.module';
import { UsersModule } from '../modules/users/users.module';
import { AdmissionModule } from '../admission/admission.module';
import { TenantGuard } from './tenant.guard';
import { TenantResolver } from './tenant-resolver';

/**
 * Global: any module can put `@UseTenant()` on its routes without importing anything. Re-exports
 * AuthModule (ClientsService, TokenService) and UsersModule (UsersService) for the same reason.
 */
@Global()
@Module({
  imports: [AuthModule, UsersModule, AdmissionModule],
  providers: [TenantResolver, TenantGuard],
  exports: [TenantResolver, TenantGuard, AdmissionModule, AuthModule, UsersModule],
})
export class TenancyModule {}
