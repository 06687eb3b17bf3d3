import { CanActivate, ExecutionContext, Injectable } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import type { Request, Response } from 'express';
import { FhirAdmission } from '../admission/fhir-admission';
import type { FhirRequest } from '../fhir-http/fhir-route-state';
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
    private readonly admission: FhirAdmission,
  ) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const req = context.switchToHttp().getRequest<TenantRequest>();
    const opts =
      this.reflector.getAllAndOverride<TenantOptions | undefined>(TENANT_OPTIONS, [
        context.getHandler(),
        context.getClass(),
      ]) ?? {};
    req.tenant = await this.resolver.resolve(req, opts);
    // FHIR routes (`@FhirRoute()`, checked before this guard) take a client slot and admission
    const route = (req as FhirRequest).fhir;
    if (route && route.options.admitted !== false) {
      const res = context.switchToHttp().getResponse<Response>();
      const charges = await this.admission.admit(req.tenant, req, res);
      req.tenant = { ...req.tenant, ...charges };
    }
    return true;
  }
}
