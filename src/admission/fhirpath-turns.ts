import { Inject, Injectable } from '@nestjs/common';
import type { SandboxLane } from '@app/fhir';
import { SETTINGS } from '../config/config.module';
import { Settings } from '../config/settings';
import type { TenantContext } from '../tenancy/tenant-context';
import { userOf } from './caller';
import { ClientConcurrency } from './client-concurrency';
import { FairPool } from './fair-pool';

/**
 * Turns on the shared FHIRPath worker pool (FhirPathSandbox), given fairly among clients (FairPool:
 * per-client queues, costly callers behind their own work), and the worker time each evaluation
 * took charged to the caller's share (CLIENT_WORKER_MS_PER_SECOND, ClientConcurrency). At most
 * FHIRPATH_WORKERS evaluations are handed to the pool at once, so none waits in its first-come
 * queue; FHIRPATH_MAX_QUEUE wait here.
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
      heavyMs: settings.fhirpathTimeoutMs,
    });
  }

  /** Tasks running / waiting now (for tests and metrics). */
  get load(): { running: number; waiting: number } {
    return this.pool.load;
  }

  /**
   * Runs `evaluate` in the caller's turn, in the sandbox lane for its recent use; `evaluate` reports
   * the worker time it used through `spent` (from the moment a worker started it: a worker still
   * booting is nobody's cost).
   */
  async run<T>(
    ctx: Pick<TenantContext, 'clientId' | 'userId'>,
    evaluate: (spent: (ms: number) => void, lane: SandboxLane) => Promise<T>,
  ): Promise<T> {
    const turn = await this.pool.enter(ctx.clientId);
    let cost = 0;
    try {
      // a caller whose evaluations ran long lately runs on the sandbox's costly workers
      return await evaluate((ms) => (cost += ms), this.pool.isCostly(ctx.clientId) ? 'costly' : 'ordinary');
    } finally {
      turn.release(cost);
      this.concurrency.chargeWork(ctx.clientId, userOf(ctx), 'workerMs', cost);
    }
  }
}
