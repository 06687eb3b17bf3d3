import { existsSync, readFileSync } from 'fs';
import type { DocumentDbChild } from './documentdb-process';

/**
 * How often and how soon a crashed database child is started again: one attempt per delay, in
 * order; an instance that then stays up for `stableMs` has its count reset. When the delays are used
 * up the owner gives up, so that a process supervisor (systemd, Kubernetes) restarts the whole app.
 */
export interface RestartPolicy {
  delaysMs: number[];
  stableMs: number;
}

/** 1, 2, 4, 8, 16 s: about 31 s of trying before giving up. */
export const DEFAULT_RESTART_POLICY: RestartPolicy = {
  delaysMs: [1_000, 2_000, 4_000, 8_000, 16_000],
  stableMs: 60_000,
};

/** The count of attempts since the instance last ran stably. */
export class RestartBudget {
  private attempts = 0;
  private upSince?: number;

  constructor(private readonly policy: RestartPolicy) {}

  /** The delay before the next attempt, or undefined when the attempts are used up. */
  next(now: number): { delayMs: number; attempt: number; of: number } | undefined {
    if (this.upSince !== undefined && now - this.upSince >= this.policy.stableMs) this.attempts = 0;
    this.upSince = undefined;
    if (this.attempts >= this.policy.delaysMs.length) return undefined;
    const delayMs = this.policy.delaysMs[this.attempts];
    this.attempts += 1;
    return { delayMs, attempt: this.attempts, of: this.policy.delaysMs.length };
  }

  /** The instance answers again (from `now`). */
  up(now: number): void {
    this.upSince = now;
  }
}

/**
 * Whether this process's embedded database is down or just back: from a child's unexpected exit
 * until its restart completes, and `AFTER_RESTART_MS` beyond (connections the gateway pooled to the
 * old PostgreSQL fail on their first use). The gateway then answers with a generic InternalError
 * that on its own cannot be told from a real fault; the error mapping asks this to answer 503.
 */
const outage: { down: boolean; backAt?: number; postgresGone?: () => boolean } = { down: false };
export const AFTER_RESTART_MS = 10_000;

export function embeddedDatabaseRecovering(now = Date.now()): boolean {
  if (outage.down || (outage.backAt !== undefined && now - outage.backAt < AFTER_RESTART_MS)) return true;
  // The gateway may answer before this process has been told of the exit: ask the kernel.
  return outage.postgresGone?.() ?? false;
}

/**
 * Waits up to `maxMs` for this process to learn that its embedded database is down (the exit
 * event, or the kernel's word on the postmaster); true when it is. Without a supervised embedded
 * database there is nothing to wait for: false at once.
 */
export async function embeddedDatabaseVerdict(maxMs = 250, stepMs = 10): Promise<boolean> {
  if (outage.postgresGone === undefined) return embeddedDatabaseRecovering();
  for (let waited = 0; ; waited += stepMs) {
    if (embeddedDatabaseRecovering()) return true;
    if (waited >= maxMs) return false;
    await new Promise((resolve) => setTimeout(resolve, stepMs));
  }
}

/**
 * The postmaster `pid` is dead though its exit has not reached this process yet (a zombie, or gone).
 * Linux only: where /proc cannot be read this says no, and the exit event decides.
 */
function postgresGone(pid: number | undefined): boolean {
  if (pid === undefined) return false;
  try {
    return readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.startsWith('Z') ?? false;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'ENOENT' && existsSync('/proc/self/stat');
  }
}

/** What the supervisor needs of an instance (DocumentDbInstance; a fake in unit tests). */
export interface Supervisable {
  down(): DocumentDbChild[];
  /** The running postmaster's process id, if any. */
  readonly postgresPid?: number;
  repair(): Promise<void>;
  onUnexpectedExit(listener: (which: DocumentDbChild, how: string) => void): void;
}

export interface SupervisorHooks {
  log(message: string): void;
  /** Restart attempts start / end (the owner updates the instance record). */
  onState(state: 'restarting' | 'running'): void;
  /** The attempts are used up: the owner stops and exits non-zero with this error's message. */
  onGiveUp(error: Error): void;
  /** Injected for tests. */
  now?: () => number;
  schedule?: (fn: () => void, ms: number) => { cancel(): void };
}

/**
 * Watches the embedded database's children for the process that started them (the server): a child
 * that exits while not being stopped is started again after a back-off, each attempt logged.
 * Meanwhile requests fail fast on the driver (503 + Retry-After through the error mapping and
 * request admission). After the last failed attempt the owner is told to give up.
 */
export class DocumentDbSupervisor {
  private readonly budget: RestartBudget;
  private readonly maxAttempts: number;
  private pending?: { cancel(): void };
  private repairing = false;
  private stopped = false;
  private lastCause = '';
  private readonly now: () => number;
  private readonly schedule: (fn: () => void, ms: number) => { cancel(): void };

  constructor(
    private readonly instance: Supervisable,
    private readonly hooks: SupervisorHooks,
    policy: RestartPolicy = DEFAULT_RESTART_POLICY,
  ) {
    this.budget = new RestartBudget(policy);
    this.maxAttempts = policy.delaysMs.length;
    this.now = hooks.now ?? Date.now;
    this.schedule =
      hooks.schedule ??
      ((fn, ms) => {
        const timer = setTimeout(fn, ms);
        timer.unref();
        return { cancel: () => clearTimeout(timer) };
      });
    instance.onUnexpectedExit((which, how) => this.exited(which, how));
    outage.postgresGone = () => !this.stopped && postgresGone(instance.postgresPid);
    this.budget.up(this.now());
  }

  /** No more restarts (shutdown). */
  stop(): void {
    this.stopped = true;
    Object.assign(outage, { down: false, postgresGone: undefined });
    this.pending?.cancel();
    this.pending = undefined;
  }

  private exited(which: DocumentDbChild, how: string): void {
    if (this.stopped) return;
    this.lastCause = `${which} ${how}`;
    outage.down = true;
    this.hooks.log(`embedded database: ${which} exited unexpectedly (${how})`);
    // one repair at a time starts whatever is down then
    if (!this.pending && !this.repairing) this.plan();
  }

  private plan(): void {
    const next = this.budget.next(this.now());
    if (!next) {
      this.stopped = true;
      this.hooks.onGiveUp(
        new Error(
          `the embedded database could not be restarted (${this.maxAttempts} attempts); last cause: ${this.lastCause}`,
        ),
      );
      return;
    }
    this.hooks.onState('restarting');
    this.hooks.log(
      `embedded database: restarting ${this.instance.down().join(' and ')} in ${next.delayMs} ms (attempt ${next.attempt} of ${next.of})`,
    );
    this.pending = this.schedule(() => {
      this.pending = undefined;
      void this.attempt(next.attempt);
    }, next.delayMs);
  }

  private async attempt(attempt: number): Promise<void> {
    if (this.stopped) return;
    this.repairing = true;
    try {
      await this.instance.repair();
      if (this.stopped) return;
      this.hooks.log(`embedded database: restarted (attempt ${attempt}); serving again`);
      this.budget.up(this.now());
      Object.assign(outage, { down: false, backAt: Date.now() });
      this.hooks.onState('running');
    } catch (e) {
      this.lastCause = `${(e as Error).name}: ${(e as Error).message.split('\n')[0]}`;
      this.hooks.log(`embedded database: restart attempt ${attempt} failed: ${this.lastCause}`);
    } finally {
      this.repairing = false;
    }
    // something may have died again during or right after the repair
    if (!this.stopped && this.instance.down().length > 0) this.plan();
  }
}
