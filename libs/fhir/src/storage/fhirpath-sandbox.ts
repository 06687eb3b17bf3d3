import { pool, Promise as PoolPromise, type Pool } from 'workerpool';
import type { FhirVersion } from '../definitions/fhir-version';
import { OperationOutcomeError } from '../outcome/operation-outcome';

/**
 * Evaluates a caller's FHIRPath expression (a FHIRPath Patch path) off the request-serving event
 * loop, in a small pool of worker threads, with a hard time bound: a task still running at the
 * deadline has its worker terminated (V8 stops it mid-regex) and the caller gets 422. fhirpath.js
 * runs `matches()`/`replaceMatches()` patterns on JavaScript's backtracking engine, so one
 * expression such as `'aaaa…!'.matches('^(a+)+$')` can take seconds to hours; here it costs one
 * worker for at most the bound, and other tenants' requests never wait for it (docs/security.md).
 */

/** For each item the expression selected: the key path of an object of the resource, else null. */
export type Selection = Array<string[] | null>;

export interface SandboxLimits {
  /** Time one evaluation may run (from the moment a worker starts it). */
  timeoutMs: number;
  workers: number;
  /** Evaluations waiting for a worker; one more → 503 (the pool is busy with other callers). */
  maxQueue: number;
  /** Heap of one worker: an expression that builds huge collections dies alone. */
  maxHeapMb: number;
}

/**
 * The worker: plain JavaScript run with `eval` (no TypeScript loader needed in tests, nothing to
 * copy into dist). Module paths come resolved from the main thread. The selected objects are
 * returned as key paths, found by identity in one walk, since objects do not cross threads.
 */
const WORKER_SOURCE = `
const { workerData } = require('worker_threads');
const workerpool = require(workerData.workerpool);
const fhirpath = require(workerData.fhirpath);
const models = {
  r4: require(workerData.models.r4),
  stu3: require(workerData.models.stu3),
  dstu2: require(workerData.models.dstu2),
};
function keyPaths(root, items) {
  const wanted = new Set(items.filter((item) => item !== null && typeof item === 'object'));
  const found = new Map();
  const stack = [[root, []]];
  while (stack.length > 0 && found.size < wanted.size) {
    const [node, path] = stack.pop();
    if (wanted.has(node) && !found.has(node)) found.set(node, path);
    for (const [key, child] of Object.entries(node)) {
      if (child !== null && typeof child === 'object') stack.push([child, path.concat(key)]);
    }
  }
  return items.map((item) => found.get(item) || null);
}
function select(version, resource, expression) {
  // the main thread starts the clock on this event: a worker still booting costs the caller nothing
  workerpool.workerEmit('started');
  let items;
  try {
    items = fhirpath.evaluate(resource, expression, undefined, models[version]);
  } catch (error) {
    return { error: String((error && error.message) || error) };
  }
  return { paths: keyPaths(resource, Array.isArray(items) ? items : [items]) };
}
// the first evaluation warms the parser and the model (~80 ms here): done before the worker
// declares itself ready, so that no caller's bound pays for it
for (const model of Object.values(models)) {
  fhirpath.evaluate(
    { resourceType: 'Patient', name: [{ given: ['a'] }] },
    "Patient.name.where(given.matches('^a$')).given[0] | Patient.gender.exists()",
    undefined,
    model,
  );
}
// answered once the worker has booted: a terminated worker's slot is held until its replacement is
// ready (FhirPathSandbox.select)
workerpool.worker({ select, ready: () => true });
`;

/** How long a worker may take to boot before its first evaluation starts (safety net only). */
const BOOT_ALLOWANCE_MS = 10_000;

type WorkerReply = { error: string } | { paths: Selection };

function shown(expression: string): string {
  return expression.length > 120 ? `${expression.slice(0, 120)}…` : expression;
}

/** One worker (a workerpool of one thread) and whether an evaluation, or its replacement's boot, holds it. */
interface Slot {
  workers: Pool;
  held: boolean;
}

export class FhirPathSandbox {
  /**
   * SandboxLimits.workers slots of one worker each, created together at the first evaluation. An
   * evaluation runs on a free slot only, never queued behind a worker that boots: a slot whose
   * worker was terminated (deadline, heap) stays held, and charged to the evaluation that caused
   * it, until its replacement has booted.
   */
  private slots: Slot[] = [];
  /** Evaluations waiting for a free slot (at most SandboxLimits.maxQueue). */
  private readonly waiting: Array<(slot: Slot) => void> = [];
  private closed = false;

  constructor(private readonly limits: SandboxLimits) {}

  /**
   * The key paths `expression` selects in `resource`; 400 when it is not FHIRPath, 422 past the
   * bound. `held` is told, once, how long the evaluation held its worker — from its start on the
   * worker to its end, and when the worker was terminated, until its replacement has booted (the
   * others could not use it meanwhile) — when the worker is free again, which may be after the
   * answer; it is told 0 when the evaluation never ran (503). The caller's turn and charge follow it.
   */
  async select(
    version: FhirVersion,
    resource: object,
    expression: string,
    held?: (ms: number) => void,
  ): Promise<Selection> {
    let slot: Slot;
    try {
      slot = await this.freeSlot();
    } catch (error) {
      held?.(0);
      throw error;
    }
    let reply: WorkerReply | undefined;
    let failure: unknown;
    let timer: NodeJS.Timeout | undefined;
    let timedOut = false;
    let startedAt: number | undefined;
    // The bound runs from the worker's 'started' event, not from dispatch: a worker booting for the
    // first time is no caller's time. The pool's own timeout only catches a worker that never starts.
    const task = slot.workers.exec('select', [version, resource, expression], {
      on: () => {
        startedAt ??= performance.now();
        timer ??= setTimeout(() => {
          timedOut = true;
          void task.cancel();
        }, this.limits.timeoutMs);
      },
    });
    try {
      reply = (await task.timeout(this.limits.timeoutMs + BOOT_ALLOWANCE_MS)) as WorkerReply;
    } catch (error) {
      failure = error;
    } finally {
      clearTimeout(timer);
    }
    const ranMs = startedAt === undefined ? 0 : performance.now() - startedAt;
    if (failure === undefined) {
      this.free(slot);
      held?.(ranMs);
    } else {
      // the worker was terminated: its slot is the caller's until the replacement has booted
      const bootFrom = performance.now();
      void this.rebooted(slot).then(() => {
        this.free(slot);
        held?.(ranMs + performance.now() - bootFrom);
      });
      throw this.refusal(timedOut ? new PoolPromise.TimeoutError('timeout') : failure, expression);
    }
    if ('error' in reply!) {
      throw OperationOutcomeError.invalid(
        `the path ${shown(expression)} is not valid FHIRPath: ${reply.error}`,
      );
    }
    return reply!.paths;
  }

  /** Slots held now (for tests and metrics). */
  get heldSlots(): number {
    return this.slots.filter((slot) => slot.held).length;
  }

  /** Stops the workers (the app's shutdown; a running evaluation is cut short). */
  async onModuleDestroy(): Promise<void> {
    this.closed = true;
    const slots = this.slots;
    this.slots = [];
    await Promise.all(slots.map((slot) => slot.workers.terminate(true)));
  }

  /** A free slot, held for the caller; waits (FIFO) while all are held, 503 past maxQueue. */
  private freeSlot(): Promise<Slot> {
    if (this.closed) return Promise.reject(this.shutDown());
    if (this.slots.length === 0) {
      this.slots = Array.from({ length: this.limits.workers }, () => ({
        workers: this.worker(),
        held: false,
      }));
    }
    const free = this.slots.find((slot) => !slot.held);
    if (free) {
      free.held = true;
      return Promise.resolve(free);
    }
    if (this.waiting.length >= this.limits.maxQueue) {
      return Promise.reject(this.refusal(new Error('max queue size reached'), ''));
    }
    return new Promise((resolve) => this.waiting.push(resolve));
  }

  private free(slot: Slot): void {
    if (!this.slots.includes(slot)) return; // shut down meanwhile
    const next = this.waiting.shift();
    if (next) next(slot);
    else slot.held = false;
  }

  /** Resolves once the slot's worker answers again (a terminated worker is replaced at once). */
  private async rebooted(slot: Slot): Promise<void> {
    try {
      await slot.workers.exec('ready', []).timeout(BOOT_ALLOWANCE_MS);
    } catch {
      if (this.closed) return; // shut down meanwhile
      // the replacement did not come up: a new pool in its place
      void slot.workers.terminate(true).catch(() => undefined);
      slot.workers = this.worker();
    }
  }

  private worker(): Pool {
    return pool(WORKER_SOURCE, {
      workerType: 'thread',
      // the replacement of a terminated worker boots at once, not when the next caller comes
      minWorkers: 1,
      maxWorkers: 1,
      workerThreadOpts: {
        eval: true,
        workerData: {
          workerpool: require.resolve('workerpool'),
          fhirpath: require.resolve('fhirpath'),
          models: {
            r4: require.resolve('fhirpath/fhir-context/r4'),
            stu3: require.resolve('fhirpath/fhir-context/stu3'),
            dstu2: require.resolve('fhirpath/fhir-context/dstu2'),
          },
        },
        resourceLimits: { maxOldGenerationSizeMb: this.limits.maxHeapMb },
      },
    });
  }

  /**
   * The app is closing (a deploy, a restart): the evaluation was stopped or never ran, nothing was
   * changed, and the request may be sent again to the next instance — 503, not the 500 of an
   * unexpected error.
   */
  private shutDown(): OperationOutcomeError {
    return new OperationOutcomeError(
      'transient',
      'the server is shutting down: the FHIRPath evaluation was stopped and nothing was changed; retry',
      { status: 503, headers: { 'Retry-After': '1' } },
    );
  }

  private refusal(error: unknown, expression: string): unknown {
    // its worker was terminated by the shutdown, not by its own bound or heap
    if (this.closed) return this.shutDown();
    if (error instanceof PoolPromise.TimeoutError) {
      return new OperationOutcomeError(
        'too-costly',
        `the FHIRPath ${shown(expression)} did not finish within ${this.limits.timeoutMs} ms (FHIRPATH_TIMEOUT_MS); nothing was changed`,
        { status: 422 },
      );
    }
    const message = error instanceof Error ? error.message : String(error);
    if (/max queue size/i.test(message)) {
      return new OperationOutcomeError(
        'transient',
        'too many FHIRPath evaluations are waiting (FHIRPATH_MAX_QUEUE); retry',
        { status: 503, headers: { 'Retry-After': '1' } },
      );
    }
    if (/terminated unexpectedly|out of memory|ERR_WORKER_OUT_OF_MEMORY/i.test(message)) {
      return new OperationOutcomeError(
        'too-costly',
        `the FHIRPath ${shown(expression)} needed more than ${this.limits.maxHeapMb} MB; nothing was changed`,
        { status: 422 },
      );
    }
    return error;
  }
}
