import { CanActivate, ExecutionContext, Injectable } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import type { Request, Response } from 'express';
import type { FhirRequest } from '../fhir-http/fhir-route-state';
import { ClientConcurrency } from './client-concurrency';
import { RequestAdmission } from './request-admission';
import { TenantContext } from './tenant-context';
import { TenantOptions, TenantResolver } from './tenant-resolver';

export const TENANT_OPTIONS = 'tenant:options';

/** Set on FHIR routes by the guard: counts an answer's bytes against the client's share (the FHIR reply interceptor). */
export interface ResponseCharge {
  chargeResponse?: (bytes: number) => void;
}

/** The request after the guard: `req.tenant` holds the resolved context. */
export type TenantRequest = Request & { tenant?: TenantContext };

/** Resolves the request's credentials into `req.tenant` (or throws 400/401/403/404). */
@Injectable()
export class TenantGuard implements CanActivate {
  constructor(
    private readonly reflector: Reflector,
    private readonly resolver: TenantResolver,
    private readonly concurrency: ClientConcurrency,
    private readonly admission: RequestAdmission,
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
      // held until the answer is written or the connection goes away
      const slot = this.concurrency.acquire(req.tenant.clientId);
      const res = context.switchToHttp().getResponse<Response>();
      res.once('finish', slot.release);
      res.once('close', slot.release);
      (res.locals as ResponseCharge).chargeResponse = slot.charge;
      // then waits for its turn on the database (the client's slot is held while it waits)
      await this.admission.admit(req.tenant.clientId, req, res);
    }
    return true;
  }
}
