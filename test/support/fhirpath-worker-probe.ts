import { Promise as PoolPromise } from 'workerpool';

/**
 * Watches the FHIRPath sandbox's worker threads from inside workerpool (FhirPathSandbox's pools),
 * so that a test can tell where an evaluation went without timing it: a latency threshold flakes
 * on a loaded machine, a count of what was handed to which worker does not.
 */
export interface FhirPathWorkerProbe {
  /** Evaluations of a watched expression handed to a worker thread. */
  readonly handed: number;
  /** …of those, handed to a worker that had not booted yet: it holds them until it has. */
  readonly handedToBooting: number;
  /** …of those, handed while another worker was out of service (cut at a deadline, its replacement not booted yet). */
  readonly handedDuringReboot: number;
  /** Evaluations (of any expression) cut at their deadline: each takes its worker out of service until a replacement has booted. */
  readonly cut: number;
  /** Workers out of service now. */
  readonly rebooting: number;
  /** Workers (first ones or replacements) created and not booted yet. */
  readonly booting: number;
  /** Worker threads created so far. */
  readonly created: number;
  /** Puts workerpool back as it was. */
  restore(): void;
}

/** What the probe reads of workerpool's WorkerHandler (workerpool/src/WorkerHandler.js). */
interface Handler {
  terminated: boolean;
  worker: { ready?: boolean; on(event: 'message', listener: (message: unknown) => void): void };
  exec(
    method: string,
    params: unknown[],
    resolver: { promise: PromiseLike<unknown> },
    options?: unknown,
  ): unknown;
}

/** What the probe wraps of workerpool's Pool (workerpool/src/Pool.js). */
interface PoolInternals {
  _createWorkerHandler(): Handler;
  _removeWorker(handler: Handler): unknown;
}

/**
 * Wraps workerpool's hand-off of a task to a worker thread (WorkerHandler.exec), the creation of
 * a worker and the replacement of a terminated one, for this test file's copy of workerpool (the
 * one the app under test loaded). Counts the evaluations `watched` picks; call restore() after.
 */
export function probeFhirPathWorkers(watched: (expression: string) => boolean): FhirPathWorkerProbe {
  // the module instances the app's sandbox uses: jest's registry, not Node's (no types shipped for them)
  /* eslint-disable @typescript-eslint/no-require-imports */
  const handlerProto = (require('workerpool/src/WorkerHandler') as { prototype: Handler }).prototype;
  const poolProto = (require('workerpool/src/Pool') as { prototype: PoolInternals }).prototype;
  /* eslint-enable @typescript-eslint/no-require-imports */
  const exec = handlerProto.exec;
  const createWorkerHandler = poolProto._createWorkerHandler;
  const removeWorker = poolProto._removeWorker;
  const handlers = new Set<Handler>();
  let replacing = false;
  const seen = { handed: 0, handedToBooting: 0, handedDuringReboot: 0, cut: 0, rebooting: 0 };

  handlerProto.exec = function (this: Handler, method, params, resolver, options) {
    if (method === 'select') {
      if (typeof params[2] === 'string' && watched(params[2])) {
        seen.handed += 1;
        if (!this.worker.ready) seen.handedToBooting += 1;
        if (seen.rebooting > 0) seen.handedDuringReboot += 1;
      }
      // the sandbox cancels an evaluation at its deadline, and workerpool then terminates its worker
      resolver.promise.then(undefined, (error: unknown) => {
        if (error instanceof PoolPromise.CancellationError) {
          seen.cut += 1;
          seen.rebooting += 1;
        }
      });
    }
    return exec.call(this, method, params, resolver, options);
  };
  poolProto._removeWorker = function (this: PoolInternals, handler) {
    // a pool with minWorkers creates the replacement within this call
    replacing = true;
    try {
      return removeWorker.call(this, handler);
    } finally {
      replacing = false;
    }
  };
  poolProto._createWorkerHandler = function (this: PoolInternals) {
    const handler = createWorkerHandler.call(this);
    handlers.add(handler);
    if (replacing) {
      handler.worker.on('message', (message) => {
        if (message === 'ready' && seen.rebooting > 0) seen.rebooting -= 1;
      });
    }
    return handler;
  };

  return {
    get handed() {
      return seen.handed;
    },
    get handedToBooting() {
      return seen.handedToBooting;
    },
    get handedDuringReboot() {
      return seen.handedDuringReboot;
    },
    get cut() {
      return seen.cut;
    },
    get rebooting() {
      return seen.rebooting;
    },
    get booting() {
      return [...handlers].filter((handler) => !handler.terminated && !handler.worker.ready).length;
    },
    get created() {
      return handlers.size;
    },
    restore() {
      handlerProto.exec = exec;
      poolProto._createWorkerHandler = createWorkerHandler;
      poolProto._removeWorker = removeWorker;
    },
  };
}
