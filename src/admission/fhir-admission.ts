import { Injectable } from '@nestjs/common';
import type { Request, Response } from 'express';
import type { TenantContext } from '../tenancy/tenant-context';
import { userOf } from './caller';
import { ClientConcurrency } from './client-concurrency';
import { DatabaseClock } from './database-clock';
import { EventLoopTime } from './event-loop-time';
import { KnownCredentials } from './known-credentials';
import type { LaneTicket } from './admission-lane';
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
   * `ctx` with the charges made for the request to the caller's share (TenantContext's charging
   * functions: the engine's reads it did not answer and its database time, by the storage layer; its
   * steps' event-loop time after admission, timedOnLoop), once the request may run: at once when its
   * lane has room (no promise), else a promise. One object: the context a request runs with.
   */
  admit(
    ctx: TenantContext,
    lane: RouteLane,
    req: Request,
    res: Response,
  ): TenantContext | Promise<TenantContext> {
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
    // The client's slot and the lane's are both given back when the answer is written or the
    // connection goes away: one listener for each event, not one per slot.
    let ticket: LaneTicket | undefined;
    // the database time the request was charged, which its lane's expected cost of the client learns from
    let databaseMs = 0;
    res.once('finish', () => {
      if (!charged) slot.charge(answerBytes(res, writtenBefore));
      slot.release();
      if (ticket !== undefined) this.lanes.answered(ticket, res, databaseMs);
    });
    res.once('close', () => {
      slot.release();
      ticket?.release(databaseMs);
    });
    const { chargeUnservedReads, chargeLoopMs } = slot;
    // Database time of reads and writes alike (a slow read answers as little as a fast one; a
    // write flood holds the engine as a read flood does), each command charged its part of the
    // engine's time, not its wall-clock time (DatabaseClock). Bulk export and purge run outside
    // the lanes at their own pace (purge's pacer), and are not charged.
    const admitted: TenantContext =
      lane === 'bulk'
        ? { ...ctx, chargeUnservedReads, chargeLoopMs }
        : {
            ...ctx,
            chargeUnservedReads,
            chargeLoopMs,
            startDatabaseCommand: () => {
              const ended = this.clock.start();
              return () => {
                const ms = ended();
                databaseMs += ms;
                // a client of costly requests keeps a smaller part of its share (RequestAdmission.databaseShare)
                slot.chargeDatabaseMs(ms / this.lanes.databaseShare(clientId, lane));
              };
            },
          };
    // then waits for its turn on the database (the client's slot is held while it waits)
    const entered = this.lanes.enter(clientId, lane, res);
    const hold = (granted: LaneTicket | undefined): TenantContext => {
      // a connection gone before its turn came: nothing will answer, the slot goes back now
      if (granted !== undefined && res.destroyed) granted.release();
      else ticket = granted;
      return admitted;
    };
    return entered instanceof Promise ? entered.then(hold) : hold(entered);
  }
}

/** The body size an answer declared, or (streamed, no Content-Length) what its socket carried. */
function answerBytes(res: Response, writtenBefore: number): number {
  const declared = Number(res.getHeader('content-length'));
  if (Number.isFinite(declared) && declared >= 0) return declared;
  return Math.max(0, (res.socket?.bytesWritten ?? writtenBefore) - writtenBefore);
}
