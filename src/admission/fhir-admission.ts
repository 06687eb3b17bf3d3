import { Injectable } from '@nestjs/common';
import type { Request, Response } from 'express';
import { ClientConcurrency } from './client-concurrency';
import { RequestAdmission } from './request-admission';
import { setResponseCharge } from './response-charge';

/**
 * Admission of one FHIR request of a client (docs/security.md "Tenant fairness"): the client's
 * slot and byte share (ClientConcurrency), then its turn in the read or write lane
 * (RequestAdmission). Both are held until the answer is written or the connection goes away.
 */
@Injectable()
export class FhirAdmission {
  constructor(
    private readonly concurrency: ClientConcurrency,
    private readonly lanes: RequestAdmission,
  ) {}

  async admit(clientId: string, req: Request, res: Response): Promise<void> {
    const slot = this.concurrency.acquire(clientId);
    res.once('finish', slot.release);
    res.once('close', slot.release);
    setResponseCharge(res, slot.charge);
    // then waits for its turn on the database (the client's slot is held while it waits)
    await this.lanes.admit(clientId, req, res);
  }
}
