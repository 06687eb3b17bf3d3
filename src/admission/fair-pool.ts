import { OperationOutcomeError } from '@app/fhir';

export interface FairPoolOptions {
  /** For messages: what the pool runs. */
  name: string;
  /** Tasks that run at once (all callers together). */
  capacity: number;
  /** Tasks that may wait (all callers together); one more → 503, or the heaviest caller's newest waiter. */
  maxQueue: number;
  /** The setting that sets maxQueue, named in the 503. */
  maxQueueSetting: string;
  /**
   * Whether a client other than `key` contends now (has a request in flight on the server, or had
   * one very lately: ClientConcurrency.othersContend). While one does, `key` runs at most
   * capacity − 1 tasks: a worker stays free for the others whenever they come.
   */
  othersContend?: (key: string) => boolean;
}

/** A running task's turn. */
export interface PoolTurn {
  /** Gives the turn back (once), counting `costMs` to the caller's recent use. */
  release(costMs: number): void;
}

interface Waiter {
  key: string;
  seq: number;
  resolve(turn: PoolTurn): void;
  reject(err: Error): void;
}

/** A caller's recent use of the pool: `ms` at time `at`, halving every USE_HALF_LIFE_MS. */
interface Use {
  ms: number;
  at: number;
}

const USE_HALF_LIFE_MS = 1_000;
/** A caller whose decayed use is at least this used the pool lately: it contends (a few seconds after a task of 10 ms or more). */
const RECENT_USE_MS = 1;
/** Callers whose use is kept before the ones that decayed to nothing are forgotten. */
const MAX_USES = 10_000;

/**
 * A fair queue in front of a shared pool of workers (the FHIRPath worker pool): each caller
 * (client) waits in its own queue, and a freed slot goes to the waiting caller with the fewest
 * running tasks, then the least recent use of the pool (ms held, decaying), then the longest
 * waiting — start-time fair queueing by cost. A caller whose tasks are costly so waits behind its
 * own work, not in front of everyone else's; one of cheap tasks passes it at the next free slot.
 * No caller holds every worker while another contends (capacity − 1 at most): a costly FHIRPath
 * holds its worker for the whole time bound and then while its replacement boots, and one
 * caller's burst of them must not make the others wait for that.
 */
export class FairPool {
  private readonly running = new Map<string, number>();
  private runningTotal = 0;
  private readonly queues = new Map<string, Waiter[]>();
  private waiting = 0;
  private seq = 0;
  private readonly uses = new Map<string, Use>();

  constructor(
    private readonly opts: FairPoolOptions,
    private readonly now: () => number = Date.now,
  ) {}

  /** Tasks running / waiting now (for tests and metrics). */
  get load(): { running: number; waiting: number } {
    return { running: this.runningTotal, waiting: this.waiting };
  }

  /** Resolves with a turn once the caller's task may run; rejects 503 when the queue is full. */
  enter(key: string): Promise<PoolTurn> {
    if (this.waiting === 0 && this.runningTotal < this.opts.capacity && this.mayStart(key)) {
      return Promise.resolve(this.start(key));
    }
    return new Promise<PoolTurn>((resolve, reject) => {
      if (this.waiting >= this.opts.maxQueue && !this.evictFor(key)) return reject(this.fullError());
      const waiter: Waiter = { key, seq: this.seq++, resolve, reject };
      const queue = this.queues.get(key);
      if (queue) queue.push(waiter);
      else this.queues.set(key, [waiter]);
      this.waiting += 1;
      this.dispatch();
    });
  }

  /** The caller's recent use of the pool in ms (decayed to now). */
  useOf(key: string): number {
    const use = this.uses.get(key);
    if (!use) return 0;
    return use.ms * 2 ** (-(this.now() - use.at) / USE_HALF_LIFE_MS);
  }

  private start(key: string): PoolTurn {
    this.running.set(key, (this.running.get(key) ?? 0) + 1);
    this.runningTotal += 1;
    let released = false;
    return {
      release: (costMs) => {
        if (released) return;
        released = true;
        this.uses.set(key, { ms: this.useOf(key) + Math.max(0, costMs), at: this.now() });
        if (this.uses.size > MAX_USES) this.forgetUnused();
        const left = (this.running.get(key) ?? 1) - 1;
        if (left <= 0) this.running.delete(key);
        else this.running.set(key, left);
        this.runningTotal -= 1;
        this.dispatch();
      },
    };
  }

  /**
   * While another caller contends — waits here, runs here, used the pool lately (a sequential
   * caller between two of its tasks), or is in flight elsewhere — keep a task free for it.
   */
  private mayStart(key: string): boolean {
    if (this.opts.capacity < 2 || (this.running.get(key) ?? 0) < this.opts.capacity - 1) return true;
    for (const other of this.queues.keys()) if (other !== key) return false;
    for (const other of this.running.keys()) if (other !== key) return false;
    for (const other of this.uses.keys())
      if (other !== key && this.useOf(other) >= RECENT_USE_MS) return false;
    return !(this.opts.othersContend?.(key) ?? false);
  }

  /** Fills free slots: fewest running, then least recent use, then the longest waiting. */
  private dispatch(): void {
    while (this.runningTotal < this.opts.capacity && this.waiting > 0) {
      let chosen: Waiter[] | undefined;
      let best: [number, number, number] | undefined;
      for (const [key, queue] of this.queues) {
        if (!this.mayStart(key)) continue;
        const rank: [number, number, number] = [this.running.get(key) ?? 0, this.useOf(key), queue[0].seq];
        if (
          !best ||
          rank[0] < best[0] ||
          (rank[0] === best[0] && (rank[1] < best[1] || (rank[1] === best[1] && rank[2] < best[2])))
        ) {
          best = rank;
          chosen = queue;
        }
      }
      if (!chosen) return; // only a caller at capacity − 1 waits: the last task stays free for the others
      const waiter = chosen.shift()!;
      if (chosen.length === 0) this.queues.delete(waiter.key);
      this.waiting -= 1;
      waiter.resolve(this.start(waiter.key));
    }
  }

  /**
   * The queue is full: the newest waiter of the caller with the most waiters (more than `key`
   * would have) makes room, refused 503; false when `key` is that caller itself.
   */
  private evictFor(key: string): boolean {
    let heaviest: Waiter[] | undefined;
    for (const [other, queue] of this.queues) {
      if (other !== key && queue.length > (heaviest?.length ?? 0)) heaviest = queue;
    }
    const own = this.queues.get(key)?.length ?? 0;
    if (!heaviest || heaviest.length <= own + 1) return false;
    const evicted = heaviest.pop()!;
    if (heaviest.length === 0) this.queues.delete(evicted.key);
    this.waiting -= 1;
    evicted.reject(this.fullError());
    return true;
  }

  private forgetUnused(): void {
    for (const key of this.uses.keys())
      if (this.useOf(key) < 1 && !this.running.has(key)) this.uses.delete(key);
  }

  private fullError(): OperationOutcomeError {
    return new OperationOutcomeError(
      'transient',
      `too many ${this.opts.name} are waiting (${this.opts.maxQueueSetting}); retry`,
      { status: 503, headers: { 'Retry-After': '1' } },
    );
  }
}
