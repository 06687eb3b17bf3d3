import { Inject, Injectable } from '@nestjs/common';
import type { Response } from 'express';
import { SETTINGS } from '../config/config.module';
import { Settings } from '../config/settings';
import { DatabaseLiveness } from '../database/database-liveness';
import { AdmissionLane, databaseShareFraction, LaneTicket } from './admission-lane';
import { ClientConcurrency } from './client-concurrency';

export type AdmissionLaneName = 'read' | 'write';

/**
 * Where a FHIR route waits (its `@FhirRoute` says): the read or the write lane, or outside the
 * lanes (`bulk`). Reads (GET, HEAD, POST `_search`) and writes (everything else, bundles included)
 * wait apart, so reads are not queued behind writes, which on this store cost far more database
 * time (index entries per resource). Bulk work is outside the lanes: export kick-offs, status polls
 * and NDJSON downloads (long streams paced by the client's socket, bounded by
 * CLIENT_RESPONSE_BYTES_PER_SECOND) and purge (its own PURGE_BUDGET_MS). Holding an interactive
 * slot for their whole length would stall the lane; each is still limited per client by
 * CLIENT_MAX_CONCURRENT_REQUESTS.
 */
export type RouteLane = AdmissionLaneName | 'bulk';

/**
 * Admission of FHIR requests before they touch the database (docs/security.md): at most
 * SERVER_MAX_CONCURRENT_READS reads and SERVER_MAX_CONCURRENT_WRITES writes run at once, so the
 * engine works near its best concurrency, requests never queue for a pooled connection (the
 * lanes fit in the pool, sized from them in src/database/driver-pool.ts; a wait for a connection
 * is bounded by the server-selection time-out and would answer 503 though the database is only
 * busy), and a busy server answers the clients over their share with 429 (see AdmissionLane).
 * While another client is active (ClientConcurrency.anotherClientActive), a client of costly requests
 * holds few slots of a lane (AdmissionLane.contendedCap), its other requests waiting behind it.
 */
@Injectable()
export class RequestAdmission {
  private readonly lanes: Record<AdmissionLaneName, AdmissionLane>;

  /** The least part of its database share a client of costly requests keeps (CLIENT_COSTLY_DATABASE_SHARE_PERCENT). */
  private readonly costlyShare: number;

  constructor(
    @Inject(SETTINGS) settings: Settings,
    private readonly liveness: DatabaseLiveness,
    concurrency: ClientConcurrency,
  ) {
    this.costlyShare = settings.clientCostlyDatabaseSharePercent / 100;
    const othersContend = (clientId: string) => concurrency.anotherClientActive(clientId);
    const common = {
      shareWaitMs: settings.serverQueueWaitMs,
      stallMs: liveness.probeTimeoutMs,
      maxWaitMs: settings.dbTimeoutMs,
    };
    this.lanes = {
      read: new AdmissionLane(
        { ...common, name: 'read', capacity: settings.serverMaxConcurrentReads },
        liveness,
        Date.now,
        othersContend,
      ),
      write: new AdmissionLane(
        { ...common, name: 'write', capacity: settings.serverMaxConcurrentWrites },
        liveness,
        Date.now,
        othersContend,
      ),
    };
  }

  /**
   * The request's turn in the lane its route declares: a slot at once when the lane has room (no
   * wait to give up, so no promise), else a promise of one once it may run (rejected with 429/503
   * as AdmissionLane says, or when the client leaves while waiting: it leaves the queue), or
   * undefined outside the lanes (`bulk`). The caller gives the slot back: `answered` once the answer
   * is written, `release` when the connection goes away (FhirAdmission, with its own slot's).
   */
  enter(clientId: string, lane: RouteLane, res: Response): LaneTicket | Promise<LaneTicket> | undefined {
    if (lane === 'bulk') return undefined;
    return this.lanes[lane].tryEnter(clientId) ?? this.wait(clientId, this.lanes[lane], res);
  }

  /**
   * The part of its database share the client keeps for a request of `lane` while another caller
   * contends (databaseShareFraction of the lane's expected cost of the client, and whether its
   * requests wait behind its own cost cap there): its database time is charged divided by it,
   * which is the same as a share that many times smaller. Outside the lanes (bulk work, not
   * charged): 1.
   */
  databaseShare(clientId: string, lane: RouteLane): number {
    if (lane === 'bulk') return 1;
    const admitted = this.lanes[lane];
    return databaseShareFraction(
      admitted.expectedCost(clientId),
      this.costlyShare,
      admitted.backlogged(clientId),
    );
  }

  /**
   * The answer was written: its slot back (with the database time it was charged, which its
   * client's expected cost learns from), and an answer without a server error says the database
   * answers (a hung one ends requests in 5xx).
   */
  answered(ticket: LaneTicket, res: Response, databaseMs: number): void {
    if (res.statusCode < 500) this.liveness.noteAnswer();
    ticket.release(databaseMs);
  }

  private wait(clientId: string, lane: AdmissionLane, res: Response): Promise<LaneTicket> {
    return new Promise<LaneTicket>((resolve, reject) => {
      const onClose = () => {
        if (leave()) reject(new Error('client closed the connection while waiting'));
      };
      const leave = lane.wait(
        clientId,
        (ticket) => {
          res.off('close', onClose);
          resolve(ticket);
        },
        (err) => {
          res.off('close', onClose);
          reject(err);
        },
      );
      res.once('close', onClose);
    });
  }
}
