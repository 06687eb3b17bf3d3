import { CanActivate, ExecutionContext, Injectable } from '@nestjs/common';
import type { Response } from 'express';
import { FhirAdmission } from '../admission/fhir-admission';
import type { TenantRequest } from '../tenancy/tenant.guard';
import { laneOf, type FhirRequest } from './fhir-route-state';

/**
 * Admission of a FHIR request once its credentials are resolved (`@FhirRoute()` puts it after the
 * tenant guard): the caller's slot, then its turn in the lane its route declares (`lane`, default
 * by method). The charges admission makes for it ride on the tenant context to the storage layer.
 */
@Injectable()
export class FhirAdmissionGuard implements CanActivate {
  constructor(private readonly admission: FhirAdmission) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const http = context.switchToHttp();
    const req = http.getRequest<TenantRequest & FhirRequest>();
    const route = req.fhir;
    if (!route || !req.tenant || route.options.admitted === false) return true;
    const lane = laneOf(route.options, req.method);
    const charges = await this.admission.admit(req.tenant, lane, req, http.getResponse<Response>());
    req.tenant = { ...req.tenant, ...charges };
    return true;
  }
}
