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
  /**
   * Gives the slot back (once) and starts the next waiting request. `databaseMs`: the database
   * time the request was charged (DatabaseClock), which its client's expected cost learns from.
   */
  release(databaseMs?: number): void;
}

/**
 * While another client contends, a client holds slots whose expected database time together stays
 * within this budget (at least one slot): its expected time per request is the running mean of what
 * its requests of this lane were charged (processor-sharing ms). A client of cheap requests (a
 * name search or a point read: 1–10 ms) keeps most of the lane; one whose requests cost 20 ms or
 * more runs one at a time, so its burst can no longer fill every slot and starve the engine (two
 * cores) under the other clients' one query. A client not known yet counts as costly until its
 * first request is answered: a first wave of 32 costly requests runs one at a time, not eight.
 */
export const CONTENDED_BUDGET_MS = 20;
/**
 * While another caller contends, a client whose expected database time per request (the lane's
 * running mean, the one cost estimate) is at most this keeps its whole database share
 * (CLIENT_DATABASE_MS_PER_SECOND); above it the share shrinks in proportion (databaseShareFraction).
 * Twice the lane's budget: a cheap client's reads and single writes cost 1–10 ms, but on a loaded
 * engine the processor-sharing clock charges them tens of ms, and a back-to-back cheap client
 * already spends most of its share; the requests that amplify ($everything over large outside
 * resources, transactions of 20, slow scans) cost 100 ms or more each.
 */
export const FULL_SHARE_COST_MS = 2 * CONTENDED_BUDGET_MS;

/**
 * The part of its database share a client keeps while another caller contends, from its expected
 * database time per request: 1 up to FULL_SHARE_COST_MS (or not known yet), then
 * FULL_SHARE_COST_MS / expected, never under `minFraction` (CLIENT_COSTLY_DATABASE_SHARE_PERCENT).
 * As the lane caps a costly client's slots by cost, this caps its database time by cost: of two
 * clients at the same share, the one of 100 ms requests gets less of the engine than the one of
 * 3 ms requests, where equal shares let one $everything or transaction flood hold half the engine
 * (a victim's reads then wait behind it about as long as they run). Alone, nothing is charged.
 *
 * A client `backlogged` in the lane (AdmissionLane.backlogged: its requests wait behind its own
 * cost cap) keeps only `minFraction`, whatever each request costs: it asks for more of the engine
 * than the lane lets it hold at once, request after request. The cost per request cannot see a
 * flood of requests that are each cheap (transactions of 20 at ~15 ms, one at a time, always one
 * in the engine: the victim's reads ran beside one nearly every time); its rate can, and a client
 * sending one request at a time (a reader, however slow the engine) is never backlogged.
 */
export function databaseShareFraction(
  expectedMs: number | undefined,
  minFraction: number,
  backlogged = false,
): number {
  if (backlogged) return Math.min(1, minFraction);
  if (expectedMs === undefined || !(expectedMs > FULL_SHARE_COST_MS)) return 1;
  return Math.min(1, Math.max(minFraction, FULL_SHARE_COST_MS / expectedMs));
}

/** Weight of the newest request in a client's running mean database time. */
const COST_WEIGHT = 0.25;
/** Clients whose expected cost is kept; past that the oldest entry is forgotten. */
const MAX_KNOWN_CLIENTS = 10_000;

/** Whether another client contends for the database now (ClientConcurrency's rule). */
export type OthersContend = (clientId: string) => boolean;

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
 * While another client contends, a client holds at most its cost cap (CONTENDED_BUDGET_MS over its
 * expected database time per request, at least one): its other requests wait behind itself, free
 * slots or not. Alone it is not capped (work-conserving: a single client may use every slot).
 *
 * A wait ends in one of three ways besides a slot:
 * - 429 with Retry-After for a client at or over its fair share (capacity / active clients) that
 *   waited shareWaitMs while the database kept answering and another client waits too: overload is answered by telling the
 *   heaviest clients to come back, not by slowing everyone (nor by a 503 to everyone);
 * - 503 when the database answered nothing for stallMs and does not answer a probe either (hung
 *   or gone: the running requests will fail on their own deadline, the waiting ones need not wait
 *   for it);
 * - 503 after maxWaitMs without a slot (every slot held that long); 429 instead when the request
 *   was held behind its own client at its cost cap (its own backlog: the client is told to slow down).
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
  /** Each client's expected database time per request of this lane (ms, running mean). */
  private readonly costs = new Map<string, number>();

  constructor(
    private readonly opts: LaneOptions,
    private readonly liveness: Liveness,
    private readonly now: () => number = Date.now,
    private readonly othersContend: OthersContend = () => false,
  ) {}

  /** Requests running / waiting now (for tests and metrics). */
  get load(): { running: number; waiting: number } {
    return { running: this.runningTotal, waiting: this.waiting };
  }

  /** A slot at once when the lane has room and nobody waits (no wait, no promise); else undefined. */
  tryEnter(clientId: string): LaneTicket | undefined {
    if (this.runningTotal >= this.opts.capacity || this.heldAtCap(clientId)) return undefined;
    // nobody waits, or only clients held at their cost cap (they wait behind themselves)
    if (this.waiting === 0 || !this.someoneDispatchable()) return this.start(clientId);
    return undefined;
  }

  /**
   * Slots the client may hold while another client contends: CONTENDED_BUDGET_MS over its expected
   * database time per request (unknown: one), at least one, and never every slot of the lane (at
   * most capacity − 1, as the FHIRPath pool keeps a worker free). The expected cost is a running
   * mean of answered requests: a client that sent cheap requests first, then a wave of costly
   * ones, got the cap of the cheap ones until the first costly answers came in — with the whole
   * lane that wave held every slot (a write flood's first second ran 4 transactions of 4).
   */
  contendedCap(clientId: string): number {
    const most = Math.max(1, this.opts.capacity - 1);
    const cost = this.costs.get(clientId) ?? CONTENDED_BUDGET_MS;
    if (!(cost > 0)) return most;
    return Math.max(1, Math.min(most, Math.floor(CONTENDED_BUDGET_MS / cost)));
  }

  /**
   * Whether the client's requests pile up behind its own cost cap now: it runs its cap while
   * another client contends and has more than that waiting (databaseShareFraction: it keeps the
   * costly part of its database share). More than its cap, not one: an app whose two users read
   * back to back on a slow engine (cap 1) has one read waiting for the other at times, and asks
   * for no more than twice its cap; a flood keeps its whole in-flight allowance waiting. Requests
   * waiting only because the lane is full are not its backlog.
   */
  backlogged(clientId: string): boolean {
    const waiting = this.queues.get(clientId)?.length ?? 0;
    return waiting > 0 && this.heldAtCap(clientId) && waiting > this.contendedCap(clientId);
  }

  /** The client's expected database time per request of this lane (ms, running mean), if known. */
  expectedCost(clientId: string): number | undefined {
    return this.costs.get(clientId);
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
        // held behind its own client's requests: its own backlog, not a busy server
        this.fail(
          waiter,
          this.heldAtCap(waiter.clientId) ? this.costCapError(waiter.clientId) : this.busyError(),
        );
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
      release: (databaseMs?: number) => {
        if (released) return;
        released = true;
        if (databaseMs !== undefined) this.learnCost(clientId, databaseMs);
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

  /** The client's running mean database time per request learns from one answered request. */
  private learnCost(clientId: string, databaseMs: number): void {
    if (!(databaseMs >= 0)) return;
    const known = this.costs.get(clientId);
    this.costs.set(clientId, known === undefined ? databaseMs : known + COST_WEIGHT * (databaseMs - known));
    if (this.costs.size > MAX_KNOWN_CLIENTS) this.costs.delete(this.costs.keys().next().value!);
  }

  /** The client runs at least its cost cap while another client contends: its next request waits. */
  private heldAtCap(clientId: string): boolean {
    const running = this.running.get(clientId);
    return running !== undefined && running >= this.contendedCap(clientId) && this.othersContend(clientId);
  }

  /** Whether some waiting client may start now (not held at its cost cap). */
  private someoneDispatchable(): boolean {
    for (const clientId of this.queues.keys()) if (!this.heldAtCap(clientId)) return true;
    return false;
  }

  /**
   * Fills free slots: the waiting client with the fewest running requests first, skipping clients
   * held at their cost cap (their requests wait until one of their own ends or nobody contends).
   */
  private dispatch(): void {
    while (this.runningTotal < this.opts.capacity && this.waiting > 0) {
      let chosen: Waiter[] | undefined;
      let chosenRunning = Infinity;
      for (const [clientId, queue] of this.queues) {
        const running = this.running.get(clientId) ?? 0;
        if (
          (running < chosenRunning ||
            (running === chosenRunning && queue[0].queuedAt < chosen![0].queuedAt)) &&
          !this.heldAtCap(clientId)
        ) {
          chosen = queue;
          chosenRunning = running;
        }
      }
      if (chosen === undefined) return;
      const waiter = chosen[0];
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

  private costCapError(clientId: string): OperationOutcomeError {
    const cost = Math.round(this.costs.get(clientId) ?? CONTENDED_BUDGET_MS);
    const cap = this.contendedCap(clientId);
    return new OperationOutcomeError(
      'throttled',
      `this client's ${this.opts.name} requests cost about ${cost} ms of database time each; while other clients use the database it runs ${cap} at a time (${CONTENDED_BUDGET_MS} ms of expected database time at once), and this request waited ${this.opts.maxWaitMs} ms (DB_TIMEOUT_MS) behind its own; retry later`,
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
