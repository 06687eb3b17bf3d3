import { OperationOutcomeError } from '@app/fhir';

/** What a lane needs to know about the database: when it last answered, and a way to ask it. */
export interface Liveness {
  /** When the database last answered a command (ms since the epoch). */
  lastAnswerAt(): number;
  /** True when the database answers a probe in time (concurrent callers share one probe). */
  probe(): Promise<boolean>;
}

export interface LaneOptions {
  /** For messages: which kind of request the lane admits. */
  name: string;
  /** Requests of the lane that run at once (all clients together). */
  capacity: number;
  /**
   * A request of a client already holding its fair share of the lane is refused (429) once it has
   * waited this long while the database went on answering (the others are being served).
   */
  shareWaitMs: number;
  /** No answer from the database for this long while a request waits → the database is probed. */
  stallMs: number;
  /** No slot within this long → 503 (only when slots stay held that long). */
  maxWaitMs: number;
}

/** A running request's slot. */
export interface LaneTicket {
  /** Gives the slot back (once) and starts the next waiting request. */
  release(): void;
}

interface Waiter {
  clientId: string;
  queuedAt: number;
  resolve(ticket: LaneTicket): void;
  reject(err: Error): void;
}

/**
 * One lane of request admission: at most `capacity` requests run, the rest wait, and a freed slot
 * goes to the waiting client with the fewest running requests (ties: the longest waiting) — fair
 * queueing by request count, so a client sending many requests at once cannot delay a client
 * sending one by more than one slot's time. A client's own requests start in arrival order.
 *
 * A wait ends in one of three ways besides a slot:
 * - 429 with Retry-After for a client at or over its fair share (capacity / active clients) that
 *   waited shareWaitMs while the database kept answering and another client waits too: overload is answered by telling the
 *   heaviest clients to come back, not by slowing everyone (nor by a 503 to everyone);
 * - 503 when the database answered nothing for stallMs and does not answer a probe either (hung
 *   or gone: the running requests will fail on their own deadline, the waiting ones need not wait
 *   for it);
 * - 503 after maxWaitMs without a slot (every slot held that long).
 */
export class AdmissionLane {
  private readonly running = new Map<string, number>();
  private runningTotal = 0;
  /** Waiting requests per client, in arrival order. */
  private readonly queues = new Map<string, Waiter[]>();
  private waiting = 0;
  private timer?: NodeJS.Timeout;
  private probing = false;
  /** When a probe of this lane was last answered (counts as an answer of the database). */
  private probeAnsweredAt = 0;

  constructor(
    private readonly opts: LaneOptions,
    private readonly liveness: Liveness,
    private readonly now: () => number = Date.now,
  ) {}

  /** Requests running / waiting now (for tests and metrics). */
  get load(): { running: number; waiting: number } {
    return { running: this.runningTotal, waiting: this.waiting };
  }

  /** A slot at once when the lane has room and nobody waits (no wait, no promise); else undefined. */
  tryEnter(clientId: string): LaneTicket | undefined {
    if (this.runningTotal < this.opts.capacity && this.waiting === 0) return this.start(clientId);
    return undefined;
  }

  /**
   * Resolves with a slot once the request may run; rejects with an OperationOutcomeError (429 or
   * 503) as above, or with the signal's reason when the request is given up (client gone).
   */
  enter(clientId: string, signal?: AbortSignal): Promise<LaneTicket> {
    const now = this.tryEnter(clientId);
    if (now !== undefined) return Promise.resolve(now);
    return new Promise<LaneTicket>((resolve, reject) => {
      if (signal?.aborted) return reject(signal.reason as Error);
      const onAbort = () => {
        if (leave()) reject(signal!.reason as Error);
      };
      const leave = this.wait(
        clientId,
        (ticket) => {
          signal?.removeEventListener('abort', onAbort);
          resolve(ticket);
        },
        (err) => {
          signal?.removeEventListener('abort', onAbort);
          reject(err);
        },
      );
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  /**
   * Queues a request (after `tryEnter` found no room): `admitted` is called with its slot, or
   * `refused` with its 429/503, never synchronously. The function returned takes it out of the
   * queue (the request was given up) and says whether it was still waiting; after it neither is
   * called. No promise and no AbortController: a busy lane queues every request.
   */
  wait(
    clientId: string,
    admitted: (ticket: LaneTicket) => void,
    refused: (err: Error) => void,
  ): () => boolean {
    const waiter: Waiter = { clientId, queuedAt: this.now(), resolve: admitted, reject: refused };
    const queue = this.queues.get(clientId);
    if (queue) queue.push(waiter);
    else this.queues.set(clientId, [waiter]);
    this.waiting += 1;
    this.startTimer();
    return () => this.remove(waiter);
  }

  /**
   * Ends waits that are over: 429 for clients over their share, 503 for a database that does not
   * answer or a wait past maxWaitMs. Runs on a timer while requests wait, and on every release.
   */
  sweep(): void {
    const now = this.now();
    const answeredAt = this.answeredAt();
    let stalled = false;
    for (const waiter of this.waiters()) {
      const waited = now - waiter.queuedAt;
      if (
        waited >= this.opts.shareWaitMs &&
        answeredAt > waiter.queuedAt &&
        this.overShare(waiter.clientId)
      ) {
        this.fail(waiter, this.overShareError());
      } else if (waited >= this.opts.maxWaitMs) {
        this.fail(waiter, this.busyError());
      } else if (now - Math.max(waiter.queuedAt, answeredAt) >= this.opts.stallMs) {
        stalled = true;
      }
    }
    if (stalled && !this.probing) {
      this.probing = true;
      void this.liveness.probe().then((answered) => {
        this.probing = false;
        if (!answered) return this.failStalled();
        this.probeAnsweredAt = this.now();
        this.sweep();
      });
    }
  }

  private start(clientId: string): LaneTicket {
    this.running.set(clientId, (this.running.get(clientId) ?? 0) + 1);
    this.runningTotal += 1;
    let released = false;
    return {
      release: () => {
        if (released) return;
        released = true;
        const left = (this.running.get(clientId) ?? 1) - 1;
        if (left <= 0) this.running.delete(clientId);
        else this.running.set(clientId, left);
        this.runningTotal -= 1;
        this.dispatch();
        if (this.waiting > 0 && this.someWaitIsDue()) this.sweep();
      },
    };
  }

  /**
   * Whether `sweep` could end a wait now: each of its rules needs a wait at least as long as the
   * shortest of shareWaitMs, maxWaitMs and stallMs, and each client's queue starts with its longest
   * wait. A release checks this (one look per waiting client) instead of walking every waiter.
   */
  private someWaitIsDue(): boolean {
    const due = this.now() - Math.min(this.opts.shareWaitMs, this.opts.maxWaitMs, this.opts.stallMs);
    for (const queue of this.queues.values()) if (queue[0].queuedAt <= due) return true;
    return false;
  }

  /** Fills free slots: the waiting client with the fewest running requests first. */
  private dispatch(): void {
    while (this.runningTotal < this.opts.capacity && this.waiting > 0) {
      let chosen: Waiter[] | undefined;
      let chosenRunning = Infinity;
      for (const [clientId, queue] of this.queues) {
        const running = this.running.get(clientId) ?? 0;
        if (
          running < chosenRunning ||
          (running === chosenRunning && queue[0].queuedAt < chosen![0].queuedAt)
        ) {
          chosen = queue;
          chosenRunning = running;
        }
      }
      const waiter = chosen![0];
      this.remove(waiter);
      waiter.resolve(this.start(waiter.clientId));
    }
  }

  /**
   * A client at or over its fair share while another client waits: the lane's capacity divided
   * among the clients that run or wait in it now (at least one slot each).
   */
  private overShare(clientId: string): boolean {
    // Alone in the queue it keeps nobody waiting: it waits its turn (up to maxWaitMs) rather than
    // being refused, as one busy client of a quiet server expects.
    if (![...this.queues.keys()].some((other) => other !== clientId)) return false;
    const active = new Set([...this.running.keys(), ...this.queues.keys()]).size;
    const share = Math.max(1, Math.floor(this.opts.capacity / Math.max(1, active)));
    return (this.running.get(clientId) ?? 0) >= share;
  }

  /** After a probe without an answer: every wait that saw no answer for stallMs ends with 503. */
  private failStalled(): void {
    const now = this.now();
    const answeredAt = this.answeredAt();
    for (const waiter of this.waiters()) {
      if (now - Math.max(waiter.queuedAt, answeredAt) >= this.opts.stallMs)
        this.fail(waiter, this.unansweredError());
    }
  }

  private answeredAt(): number {
    return Math.max(this.liveness.lastAnswerAt(), this.probeAnsweredAt);
  }

  private *waiters(): Generator<Waiter> {
    // a copy: fail() changes the queues
    for (const queue of [...this.queues.values()]) yield* [...queue];
  }

  private fail(waiter: Waiter, err: Error): void {
    if (this.remove(waiter)) waiter.reject(err);
  }

  /** Takes the waiter out of its queue; false when it had left already. */
  private remove(waiter: Waiter): boolean {
    const queue = this.queues.get(waiter.clientId);
    const at = queue?.indexOf(waiter) ?? -1;
    if (!queue || at < 0) return false;
    queue.splice(at, 1);
    if (queue.length === 0) this.queues.delete(waiter.clientId);
    this.waiting -= 1;
    if (this.waiting === 0) this.stopTimer();
    return true;
  }

  private startTimer(): void {
    if (this.timer) return;
    const tick = Math.max(5, Math.floor(Math.min(this.opts.shareWaitMs, this.opts.stallMs) / 4));
    this.timer = setInterval(() => this.sweep(), tick);
    this.timer.unref();
  }

  private stopTimer(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }

  private overShareError(): OperationOutcomeError {
    return new OperationOutcomeError(
      'throttled',
      `the server is busy and this client already has its share of concurrent ${this.opts.name} requests; retry shortly`,
      { status: 429, headers: { 'Retry-After': '1' } },
    );
  }

  private busyError(): OperationOutcomeError {
    return new OperationOutcomeError(
      'transient',
      `the server is busy: this request waited ${this.opts.maxWaitMs} ms for one of its ${this.opts.capacity} ${this.opts.name} slots; retry later`,
      { status: 503, headers: { 'Retry-After': '5' } },
    );
  }

  private unansweredError(): OperationOutcomeError {
    return new OperationOutcomeError(
      'transient',
      `the database answered nothing for ${this.opts.stallMs} ms, nor a ping (DB_TIMEOUT_MS / 4); retry later`,
      { status: 503, headers: { 'Retry-After': '5' } },
    );
  }
}
