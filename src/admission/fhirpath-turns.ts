import { Inject, Injectable } from '@nestjs/common';
import { SETTINGS } from '../config/config.module';
import { Settings } from '../config/settings';
import type { TenantContext } from '../tenancy/tenant-context';
import { userOf } from './caller';
import { ClientConcurrency } from './client-concurrency';
import { FairPool } from './fair-pool';

/**
 * Turns on the shared FHIRPath worker pool (FhirPathSandbox), given fairly among clients (FairPool:
 * per-client queues, costly callers behind their own work, no client on every worker while another
 * contends), and the time each evaluation held its worker charged to the caller's share
 * (CLIENT_WORKER_MS_PER_SECOND, ClientConcurrency). A turn lasts as long as the worker is held: for
 * an evaluation cut at its deadline, until the worker's replacement has booted, so a client whose
 * patches keep hitting the deadline pays for the whole time the others could not use that worker
 * (and is refused 429 at admission once past its share). At most FHIRPATH_WORKERS evaluations are
 * handed to the pool at once, each to a free worker; FHIRPATH_MAX_QUEUE wait here.
 */
@Injectable()
export class FhirPathTurns {
  private readonly pool: FairPool;

  constructor(
    @Inject(SETTINGS) settings: Settings,
    private readonly concurrency: ClientConcurrency,
  ) {
    this.pool = new FairPool({
      name: 'FHIRPath evaluations',
      capacity: settings.fhirpathWorkers,
      maxQueue: settings.fhirpathMaxQueue,
      maxQueueSetting: 'FHIRPATH_MAX_QUEUE',
      othersContend: (clientId) => concurrency.othersContend(clientId),
    });
  }

  /** Tasks running / waiting now (for tests and metrics). */
  get load(): { running: number; waiting: number } {
    return this.pool.load;
  }

  /**
   * Runs `evaluate` in the caller's turn. `evaluate` must tell `held`, once, how long the worker was
   * held (FhirPathSandbox.select does, possibly after it answered: a terminated worker's boot); the
   * turn is given back and the time charged then.
   */
  async run<T>(
    ctx: Pick<TenantContext, 'clientId' | 'userId'>,
    evaluate: (held: (ms: number) => void) => Promise<T>,
  ): Promise<T> {
    const turn = await this.pool.enter(ctx.clientId);
    let given = false;
    return evaluate((ms) => {
      if (given) return;
      given = true;
      turn.release(ms);
      this.concurrency.chargeWork(ctx.clientId, userOf(ctx), 'workerMs', ms);
    });
  }
}
