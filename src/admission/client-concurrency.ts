import { Inject, Injectable } from '@nestjs/common';
import { OperationOutcomeError } from '@app/fhir';
import { SETTINGS } from '../config/config.module';
import { Settings } from '../config/settings';
import { CostLedger, COST_UNITS, type CostUnit } from './cost-ledger';

/** Seconds of each rate a caller may spend at once (its burst). */
const BURST_SECONDS = 1;
/** Weight of the newest answer in the running mean size (exponential moving average). */
const MEAN_WEIGHT = 0.25;

/**
 * A client (or user) that started or ended a request this recently counts as active: for the
 * in-flight cap and the split of the byte share, whose refusals a caller's think time between
 * requests should not undo.
 */
const ACTIVE_MS = 1_000;
/**
 * A client contends for the engine, the worker pool and the event loop while it has a request in
 * flight, or started or ended one this recently (a sequential caller's turn-around between an
 * answer and its next request); another user of the same client, only while it has a request in
 * flight (otherUserInFlight). Work (database, worker, loop ms, rows read and left out) is
 * charged, and a client's work share split among its users, only among contending callers: a
 * caller that finished a while ago waits for nobody's work, and a legitimate burst right after
 * it is charged at most this long (the processor-sharing clock charges at most the wall time),
 * well under a user's burst (BURST_SECONDS of its part).
 */
const CONTENDING_MS = 100;
/** The units charged as work: only while another caller contends, split among contending users. */
const WORK_UNITS: ReadonlySet<CostUnit> = new Set(['databaseMs', 'workerMs', 'loopMs']);

/** Callers whose state is kept before idle ones are forgotten. */
const MAX_CALLERS = 10_000;

/**
 * Requests of a user refused before its last Retry-After ran out that are tolerated per refusal
 * window, as a multiple of CLIENT_MAX_CONCURRENT_REQUESTS: its other connections were not told to
 * wait, and each may be refused in turn. Beyond that the user ignores Retry-After.
 */
const TOLERATED_EARLY_RETURNS_PER_SLOT = 2;
/** What each further early request costs the user's byte share, in seconds of its rate. */
const IGNORED_RETRY_AFTER_COST_S = 0.05;
/** The deepest a user's share goes (seconds of its rate): its longest Retry-After. */
const MAX_USER_DEBT_S = 30;
/**
 * The deepest the client's own share goes: a user's flood is charged to that user first (its debt
 * may reach MAX_USER_DEBT_S), so the client's other users are refused at most this long after it.
 */
const MAX_CLIENT_DEBT_S = 2;

/** What a unit is called in refusals, and the setting of its rate. */
const UNIT_NAMES: Record<CostUnit, { what: string; setting: string }> = {
  bytes: {
    what: 'bytes (answers, and request bodies while others wait)',
    setting: 'CLIENT_RESPONSE_BYTES_PER_SECOND',
  },
  databaseMs: {
    what: 'ms of database time',
    setting:
      'CLIENT_DATABASE_MS_PER_SECOND; less for a client of costly requests: CLIENT_COSTLY_DATABASE_SHARE_PERCENT',
  },
  workerMs: { what: 'ms of FHIRPath worker time', setting: 'CLIENT_WORKER_MS_PER_SECOND' },
  loopMs: { what: 'ms of event-loop time', setting: 'CLIENT_LOOP_MS_PER_SECOND' },
};

/** The user's last refusal: when it was told to come back, and how many came back sooner. */
interface Refusal {
  until: number;
  early: number;
}

/** What the guard holds for one admitted request. */
export interface ClientSlot {
  /** Gives the slot back (once), and the reservation of a request that sent no reply. */
  release(): void;
  /** Counts the reply's bytes against the caller's share, in place of the reservation. */
  charge(bytes: number): void;
  /**
   * Counts stored bytes the engine read for the request but that its answer does not hold (the
   * rows a byte-budgeted page looked at and left out) against the caller's share, while another
   * caller contends: its cost to the others is the engine's work, not only the bytes it is sent.
   */
  chargeUnservedReads(bytes: number): void;
  /**
   * Counts database time spent for the request (CLIENT_DATABASE_MS_PER_SECOND), while another
   * caller contends: queries that are slow but answer little hold the lanes all the same.
   */
  chargeDatabaseMs(ms: number): void;
  /** Counts time the request's FHIRPath held a worker of the shared pool (CLIENT_WORKER_MS_PER_SECOND). */
  chargeWorkerMs(ms: number): void;
  /** Counts event-loop time a step of the request took after admission (CLIENT_LOOP_MS_PER_SECOND). */
  chargeLoopMs(ms: number): void;
}

/**
 * Per-caller fairness of this process: one cost budget per client and, within it, per user
 * (docs/security.md "The cost budget"). Every tenant shares one event loop, one database and one
 * FHIRPath worker pool, so:
 * - FHIR requests in flight (CLIENT_MAX_CONCURRENT_REQUESTS), while another client is active (has
 *   a request in flight, or had one within ACTIVE_MS): the next one is answered 429 with
 *   Retry-After at once instead of queueing in front of every other tenant. A client alone on the
 *   server is not capped (work-conserving). Within a client, a user holding its part of the
 *   client's slots (the cap over the client's active users) is refused while the client's other
 *   users are active, and a user under its part is admitted even when the client is at its cap;
 * - a cost budget in several units (CostUnit: response bytes, database ms, FHIRPath worker ms,
 *   event-loop ms),
 *   token buckets with a burst of BURST_SECONDS: a caller past its share in any unit gets 429 with
 *   Retry-After until it has refilled. Each request is charged to its user's share (the client's
 *   rate divided among its active users; for work, its contending users: CONTENDING_MS) and to
 *   its client's. Each admitted request reserves the
 *   user's mean answer size at once, so a caller of large answers cannot start many at the same
 *   moment either. Like a quota of "cost points" per tenant (Medplum's fhirQuota, Azure's request
 *   units), counted in the units that are scarce here.
 */
@Injectable()
export class ClientConcurrency {
  private readonly inFlight = new Map<string, number>();
  /** Requests in flight per user (key: client + user). */
  private readonly userInFlight = new Map<string, number>();
  /** When each client last started or ended a request (ms). */
  private readonly lastActive = new Map<string, number>();
  /** When each user of each client last started or ended a request (ms). */
  private readonly usersActive = new Map<string, Map<string, number>>();
  private readonly ledger = new CostLedger(BURST_SECONDS);
  /** Running mean answer size per user (key: client + user). */
  private readonly meanBytes = new Map<string, number>();
  private readonly refusals = new Map<string, Refusal>();

  constructor(@Inject(SETTINGS) private readonly settings: Settings) {}

  /**
   * Takes a slot for the caller (throws 429 when none is free or its share is spent) and reserves
   * its mean answer size from the share. `user`: the user the request acts as ('' for the client
   * itself: a client token, or all users).
   */
  acquire(clientId: string, user = '', now = Date.now()): ClientSlot {
    const refused = this.refusal(clientId, user, now);
    if (refused) throw refused;
    const userKey = callerKey(clientId, user);
    this.inFlight.set(clientId, (this.inFlight.get(clientId) ?? 0) + 1);
    this.userInFlight.set(userKey, (this.userInFlight.get(userKey) ?? 0) + 1);
    let reserved = this.rate('bytes') > 0 ? (this.meanBytes.get(userKey) ?? 0) : 0;
    this.spend(clientId, user, 'bytes', reserved, now);
    let released = false;
    const contendedCharge = (unit: CostUnit) => (amount: number) =>
      this.chargeWork(clientId, user, unit, amount);
    return {
      charge: (bytes) => {
        if (this.rate('bytes') <= 0) return;
        const mean = this.meanBytes.get(userKey) ?? 0;
        this.meanBytes.set(userKey, mean + MEAN_WEIGHT * (bytes - mean));
        if (this.meanBytes.size > MAX_CALLERS) this.meanBytes.delete(this.meanBytes.keys().next().value!);
        this.spend(clientId, user, 'bytes', bytes - reserved, Date.now());
        reserved = 0;
      },
      chargeUnservedReads: contendedCharge('bytes'),
      chargeDatabaseMs: contendedCharge('databaseMs'),
      chargeWorkerMs: contendedCharge('workerMs'),
      chargeLoopMs: contendedCharge('loopMs'),
      release: () => {
        if (released) return;
        released = true;
        const at = Date.now();
        if (reserved > 0) this.spend(clientId, user, 'bytes', -reserved, at);
        reserved = 0;
        this.markActive(clientId, user, at);
        decrement(this.inFlight, clientId);
        decrement(this.userInFlight, userKey);
      },
    };
  }

  /**
   * Charges work done for a caller (database, worker or loop time, bytes read and left out) to its
   * user's part and its client's share, while another client contends (CONTENDING_MS) or another
   * user of its client has a request in flight: alone on the server, or after the others are done,
   * nobody waits for that work (work-conserving, as the in-flight cap).
   */
  chargeWork(clientId: string, user: string, unit: CostUnit, amount: number): void {
    if (!(amount > 0) || this.rate(unit) <= 0) return;
    const now = Date.now();
    if (this.otherUserInFlight(clientId, user) || this.othersActive(clientId, now, CONTENDING_MS)) {
      this.spend(clientId, user, unit, amount, now);
    }
  }

  /**
   * Whether another user of the same client has a request in flight. Within a client, only a
   * request running beside this one is contention: an app that serves its users one request at a
   * time (a sync job walking them in turn) is one sequential caller, and charging each turn because
   * the previous user's answer came a moment ago would throttle it for the machine's slowness alone.
   */
  private otherUserInFlight(clientId: string, user: string): boolean {
    return (this.inFlight.get(clientId) ?? 0) > (this.userInFlight.get(callerKey(clientId, user)) ?? 0);
  }

  /**
   * Whether another client is active now (a request in flight, or one started or ended within
   * ACTIVE_MS), as for the in-flight cap: the lanes' per-client slot cap engages only then.
   */
  anotherClientActive(clientId: string, now = Date.now()): boolean {
    return this.othersActive(clientId, now, ACTIVE_MS);
  }

  /**
   * The 429 a request of the caller gets now (at its in-flight cap while others are active, or a
   * share spent), or undefined when it may run; nothing is taken. Cheap and from memory:
   * admission's early refusal (early-refusal.ts) asks it before the request is logged or routed.
   * A user that keeps sending before its Retry-After ran out (more than its other connections
   * explain) pays for each such request from its own byte share, so its Retry-After grows (up to
   * MAX_USER_DEBT_S) instead of its refusals costing the server a steady stream of work; its
   * client's other users are not charged for it.
   */
  refusal(clientId: string, user = '', now = Date.now()): OperationOutcomeError | undefined {
    const limit = this.settings.clientMaxConcurrentRequests;
    const contended = this.othersActive(clientId, now, ACTIVE_MS);
    this.markActive(clientId, user, now);
    const users = this.activeUsers(clientId, now, ACTIVE_MS);
    const userKey = callerKey(clientId, user);
    const userRunning = this.userInFlight.get(userKey) ?? 0;
    const userCap = Math.max(1, Math.floor(limit / users));
    // the client at its cap (while another client, or another of its users, is active) refuses
    // the users holding their part of its slots; a user under its part still gets in
    const clientAtCap = (this.inFlight.get(clientId) ?? 0) >= limit && (contended || users > 1);
    const atCap = clientAtCap && userRunning >= userCap;
    const spent = this.spentUnit(clientId, user, now);
    if (!atCap && !spent) return undefined;
    // a refusal window opens with a refusal and lasts its Retry-After; refusals within it are early
    const last = this.refusals.get(userKey);
    const open = last !== undefined && now < last.until ? last : undefined;
    const early = open ? open.early + 1 : 0;
    const byteRate = this.rate('bytes') / users;
    if (early > limit * TOLERATED_EARLY_RETURNS_PER_SLOT && byteRate > 0) {
      this.ledger.spend(
        userKey,
        'bytes',
        byteRate * IGNORED_RETRY_AFTER_COST_S,
        byteRate,
        MAX_USER_DEBT_S,
        now,
      );
    }
    const unit = this.spentUnit(clientId, user, now);
    const retryAfter = unit ? Math.max(1, Math.ceil(this.refillSeconds(clientId, user, now))) : 1;
    this.refusals.set(
      userKey,
      open ? { until: open.until, early } : { until: now + retryAfter * 1000, early },
    );
    if (this.refusals.size > MAX_CALLERS) this.forgetIdle(now);
    if (!unit) {
      return throttled(
        users > 1
          ? `this user already has its part (${userCap}) of the client's ${limit} FHIR requests in progress (CLIENT_MAX_CONCURRENT_REQUESTS) while the client's other users are active; retry shortly`
          : `this client already has ${limit} FHIR requests in progress (CLIENT_MAX_CONCURRENT_REQUESTS); retry shortly`,
        retryAfter,
      );
    }
    const { what, setting } = UNIT_NAMES[unit.unit];
    return throttled(
      unit.of === 'user'
        ? `this user was served more than its part of the client's share of ${this.rate(unit.unit)} ${what} per second (${setting}); retry later`
        : `this client was served more than its share of ${this.rate(unit.unit)} ${what} per second (${setting}); retry later`,
      retryAfter,
    );
  }

  /** The unit (and whose share) spent now: the user's part first, then the client's. */
  private spentUnit(
    clientId: string,
    user: string,
    now: number,
  ): { unit: CostUnit; of: 'user' | 'client' } | undefined {
    const userKey = callerKey(clientId, user);
    // the users sharing each kind of unit, counted once for this instant (the same answer per kind)
    let contending: number | undefined;
    let active: number | undefined;
    for (const unit of COST_UNITS) {
      const sharing = WORK_UNITS.has(unit)
        ? (contending ??= this.activeUsers(clientId, now, CONTENDING_MS))
        : (active ??= this.activeUsers(clientId, now, ACTIVE_MS));
      const part = this.rate(unit) / sharing;
      if (this.ledger.level(userKey, unit, part, now) <= 0) return { unit, of: 'user' };
    }
    for (const unit of COST_UNITS) {
      if (this.ledger.level(clientId, unit, this.rate(unit), now) <= 0) return { unit, of: 'client' };
    }
    return undefined;
  }

  /** Seconds until every share of the caller (its user's and its client's) is above zero again. */
  private refillSeconds(clientId: string, user: string, now: number): number {
    let seconds = 0;
    for (const unit of COST_UNITS) {
      const rate = this.rate(unit);
      if (rate <= 0) continue;
      seconds = Math.max(
        seconds,
        this.ledger.secondsToRefill(
          callerKey(clientId, user),
          unit,
          rate / this.sharing(clientId, unit, now),
          now,
        ),
        this.ledger.secondsToRefill(clientId, unit, rate, now),
      );
    }
    return seconds;
  }

  /**
   * Charges the user's part (deep debt allowed) and, of the amount, only what the user's part still
   * covered to the client's share (shallow debt): a user served past its part is charged alone, so
   * its flood never spends the share of the client's other users (each keeps its part). The
   * client's share still bounds the client as a whole (users that come and go each start with a
   * full part). A give-back returns to the client only while the user's part is not in debt.
   */
  private spend(clientId: string, user: string, unit: CostUnit, amount: number, now: number): void {
    const rate = this.rate(unit);
    if (rate <= 0 || amount === 0) return;
    const part = rate / this.sharing(clientId, unit, now);
    const userKey = callerKey(clientId, user);
    const covered = this.ledger.level(userKey, unit, part, now);
    this.ledger.spend(userKey, unit, amount, part, MAX_USER_DEBT_S, now);
    const toClient = amount > 0 ? Math.min(amount, Math.max(0, covered)) : covered > 0 ? amount : 0;
    this.ledger.spend(clientId, unit, toClient, rate, MAX_CLIENT_DEBT_S, now);
  }

  /** Whether another client contends now (in flight, or started/ended within CONTENDING_MS): the lanes' cap engages only then. */
  othersContend(clientId: string, now = Date.now()): boolean {
    return this.othersActive(clientId, now, CONTENDING_MS);
  }

  private rate(unit: CostUnit): number {
    // a switch, not a lookup object: asked several times per request (no object per call)
    let rate: number;
    switch (unit) {
      case 'bytes':
        rate = this.settings.clientResponseBytesPerSecond;
        break;
      case 'databaseMs':
        rate = this.settings.clientDatabaseMsPerSecond;
        break;
      case 'workerMs':
        rate = this.settings.clientWorkerMsPerSecond;
        break;
      case 'loopMs':
        rate = this.settings.clientLoopMsPerSecond;
        break;
    }
    return rate > 0 ? rate : 0;
  }

  private markActive(clientId: string, user: string, now: number): void {
    this.lastActive.set(clientId, now);
    let users = this.usersActive.get(clientId);
    if (!users) this.usersActive.set(clientId, (users = new Map()));
    users.delete(user);
    users.set(user, now);
    if (this.usersActive.size > MAX_CALLERS) this.forgetIdle(now);
  }

  /** The users among whom the client's share of `unit` is split: contending ones for work. */
  private sharing(clientId: string, unit: CostUnit, now: number): number {
    return this.activeUsers(clientId, now, WORK_UNITS.has(unit) ? CONTENDING_MS : ACTIVE_MS);
  }

  /** Users of the client in flight or active within `windowMs` (at least one: the caller). */
  private activeUsers(clientId: string, now: number, windowMs: number): number {
    const users = this.usersActive.get(clientId);
    if (!users) return 1;
    // oldest first (re-inserted on activity): forget those past the longest window
    for (const [user, at] of users) {
      if (now - at <= ACTIVE_MS || this.userInFlight.has(callerKey(clientId, user))) break;
      users.delete(user);
    }
    let active = 0;
    for (const [user, at] of users) {
      if (now - at <= windowMs || this.userInFlight.has(callerKey(clientId, user))) active += 1;
    }
    return Math.max(1, active);
  }

  /**
   * Whether another client has a request in flight or had one within `windowMs`: only then does the
   * in-flight cap engage (ACTIVE_MS) and is work charged (CONTENDING_MS) — work-conserving: a
   * caller alone may use all of it.
   */
  private othersActive(clientId: string, now: number, windowMs: number): boolean {
    for (const other of this.inFlight.keys()) if (other !== clientId) return true;
    let found = false;
    for (const [other, at] of this.lastActive) {
      if (now - at > ACTIVE_MS) this.lastActive.delete(other);
      else if (other !== clientId && now - at <= windowMs) found = true;
    }
    return found;
  }

  private forgetIdle(now: number): void {
    for (const [key, refusal] of this.refusals) if (refusal.until < now) this.refusals.delete(key);
    for (const [clientId, users] of this.usersActive) {
      for (const [user, at] of users) if (now - at > 60_000) users.delete(user);
      if (users.size === 0) this.usersActive.delete(clientId);
    }
  }
}

/** The key of one user of a client in the maps and the ledger (a client id never holds a newline). */
function callerKey(clientId: string, user: string): string {
  return `${clientId}\n${user}`;
}

function decrement(map: Map<string, number>, key: string): void {
  const left = (map.get(key) ?? 1) - 1;
  if (left <= 0) map.delete(key);
  else map.set(key, left);
}

function throttled(message: string, retryAfterSeconds: number): OperationOutcomeError {
  return new OperationOutcomeError('throttled', message, {
    status: 429,
    headers: { 'Retry-After': String(retryAfterSeconds) },
  });
}
