import { Injectable } from '@nestjs/common';
import type { Request, Response } from 'express';
import type { TenantContext } from '../tenancy/tenant-context';
import { userOf } from './caller';
import { ClientConcurrency } from './client-concurrency';
import { DatabaseClock } from './database-clock';
import { EventLoopTime } from './event-loop-time';
import { KnownCredentials } from './known-credentials';
import { RequestAdmission, type RouteLane } from './request-admission';
import { setResponseCharge } from './response-charge';

/**
 * Admission of one FHIR request of a client (docs/security.md "Tenant fairness"): the caller's
 * slot and cost budget (ClientConcurrency: the client's and, within it, the user's), then its turn in the read or write lane
 * its route declares (RequestAdmission). Both are held until the answer is written or the connection goes away.
 */
@Injectable()
export class FhirAdmission {
  constructor(
    private readonly concurrency: ClientConcurrency,
    private readonly lanes: RequestAdmission,
    private readonly credentials: KnownCredentials,
    private readonly loop: EventLoopTime,
  ) {}

  /** The engine's time, shared among the commands running at once (one clock per process). */
  private readonly clock = new DatabaseClock();

  /**
   * `req`'s credentials were verified as `ctx`'s: the early refusal may know them from now on.
   * Resolves, once the request may run, to the charges made for it to the caller's share: the
   * engine's reads it did not answer and its database time (by the storage layer), and its steps'
   * event-loop time after admission (timedOnLoop).
   */
  async admit(
    ctx: TenantContext,
    lane: RouteLane,
    req: Request,
    res: Response,
  ): Promise<Pick<TenantContext, 'chargeUnservedReads' | 'startDatabaseCommand' | 'chargeLoopMs'>> {
    const { clientId } = ctx;
    const user = userOf(ctx);
    this.credentials.remember(req, clientId, user);
    // the event-loop time its body took before the caller was known counts before it is let in
    this.loop.admitted(req, clientId, user);
    const slot = this.concurrency.acquire(clientId, user);
    // Every answer is charged to the client's share: by the reply path when it knows the size
    // (chargeResponse), otherwise here once it is written (errors, manifests, streams, …).
    let charged = false;
    setResponseCharge(res, (bytes) => {
      charged = true;
      slot.charge(bytes);
    });
    const writtenBefore = res.socket?.bytesWritten ?? 0;
    res.once('finish', () => {
      if (!charged) slot.charge(answerBytes(res, writtenBefore));
      slot.release();
    });
    res.once('close', slot.release);
    // then waits for its turn on the database (the client's slot is held while it waits)
    await this.lanes.admit(clientId, lane, res);
    // Database time of reads and writes alike (a slow read answers as little as a fast one; a
    // write flood holds the engine as a read flood does), each command charged its part of the
    // engine's time, not its wall-clock time (DatabaseClock). Bulk export and purge run outside
    // the lanes at their own pace (purge's pacer), and are not charged.
    const { chargeUnservedReads, chargeLoopMs } = slot;
    if (lane === 'bulk') return { chargeUnservedReads, chargeLoopMs };
    return {
      chargeUnservedReads,
      chargeLoopMs,
      startDatabaseCommand: () => {
        const ended = this.clock.start();
        return () => slot.chargeDatabaseMs(ended());
      },
    };
  }
}

/** The body size an answer declared, or (streamed, no Content-Length) what its socket carried. */
function answerBytes(res: Response, writtenBefore: number): number {
  const declared = Number(res.getHeader('content-length'));
  if (Number.isFinite(declared) && declared >= 0) return declared;
  return Math.max(0, (res.socket?.bytesWritten ?? writtenBefore) - writtenBefore);
}
