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

/** Which of the sandbox's pools an evaluation runs in (see FhirPathSandbox.workers). */
export type SandboxLane = 'ordinary' | 'costly';

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
workerpool.worker({ select });
`;

/** How long a worker may take to boot before its first evaluation starts (safety net only). */
const BOOT_ALLOWANCE_MS = 10_000;

type WorkerReply = { error: string } | { paths: Selection };

function shown(expression: string): string {
  return expression.length > 120 ? `${expression.slice(0, 120)}…` : expression;
}

export class FhirPathSandbox {
  /**
   * Two pools: `ordinary` (SandboxLimits.workers) and `costly` (half of them, at least one) for
   * callers whose evaluations ran long lately (the caller says which). A costly evaluation usually
   * ends with its worker terminated, and the pool hands the next evaluation to any idle worker,
   * booting or not: kept apart, the others never wait for a worker that boots again.
   */
  private readonly workers = new Map<SandboxLane, Pool>();

  constructor(private readonly limits: SandboxLimits) {}

  /**
   * The key paths `expression` selects in `resource`; 400 when it is not FHIRPath, 422 past the
   * bound. `spent` is told the worker time the evaluation took (from its start on a worker to its
   * end or the worker's termination), to be charged to the caller.
   */
  async select(
    version: FhirVersion,
    resource: object,
    expression: string,
    spent?: (ms: number) => void,
    lane: SandboxLane = 'ordinary',
  ): Promise<Selection> {
    let reply: WorkerReply;
    let timer: NodeJS.Timeout | undefined;
    let timedOut = false;
    let startedAt: number | undefined;
    // The bound runs from the worker's 'started' event, not from dispatch: a worker that replaces
    // a terminated one boots first (~130 ms), and that is no caller's time. The pool's own timeout
    // only catches a worker that never starts.
    const task = this.pool(lane).exec('select', [version, resource, expression], {
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
      throw this.refusal(timedOut ? new PoolPromise.TimeoutError('timeout') : error, expression);
    } finally {
      clearTimeout(timer);
      if (startedAt !== undefined) spent?.(performance.now() - startedAt);
    }
    if ('error' in reply) {
      throw OperationOutcomeError.invalid(
        `the path ${shown(expression)} is not valid FHIRPath: ${reply.error}`,
      );
    }
    return reply.paths;
  }

  /** Stops the workers (the app's shutdown; a running evaluation is cut short). */
  async onModuleDestroy(): Promise<void> {
    const pools = [...this.workers.values()];
    this.workers.clear();
    await Promise.all(pools.map((workers) => workers.terminate(true)));
  }

  private pool(lane: SandboxLane): Pool {
    const existing = this.workers.get(lane);
    if (existing) return existing;
    const size = lane === 'ordinary' ? this.limits.workers : Math.max(1, Math.floor(this.limits.workers / 2));
    const created = pool(WORKER_SOURCE, {
      workerType: 'thread',
      // replacements of terminated workers boot at once, not when the next caller comes
      minWorkers: size,
      maxWorkers: size,
      maxQueueSize: this.limits.maxQueue,
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
    this.workers.set(lane, created);
    return created;
  }

  private refusal(error: unknown, expression: string): unknown {
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
