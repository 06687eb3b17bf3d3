import { CanActivate, ExecutionContext, Injectable } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import type { Request } from 'express';
import { TenantContext } from './tenant-context';
import { TenantOptions, TenantResolver } from './tenant-resolver';

export const TENANT_OPTIONS = 'tenant:options';

/** The request after the guard: `req.tenant` holds the resolved context. */
export type TenantRequest = Request & { tenant?: TenantContext };

/** Resolves the request's credentials into `req.tenant` (or throws 400/401/403/404). */
@Injectable()
export class TenantGuard implements CanActivate {
  constructor(
    private readonly reflector: Reflector,
    private readonly resolver: TenantResolver,
  ) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const req = context.switchToHttp().getRequest<TenantRequest>();
    const opts =
      this.reflector.getAllAndOverride<TenantOptions | undefined>(TENANT_OPTIONS, [
        context.getHandler(),
        context.getClass(),
      ]) ?? {};
    req.tenant = await this.resolver.resolve(req, opts);
    return true;
  }
}
