import { Inject, Injectable } from '@nestjs/common';
import { OperationOutcomeError } from '@app/fhir';
import { SETTINGS } from '../config/config.module';
import { Settings } from '../config/settings';

/**
 * A client's share of response bytes: `bytes` left at time `at` (negative: served ahead of its
 * share), and the running mean size of its answers, reserved when a request is admitted.
 */
interface ByteShare {
  bytes: number;
  at: number;
  meanBytes: number;
}

/**
 * A client's share of database time: `ms` left at time `at` (negative: used ahead of its share).
 * Database time is the wall time of the storage layer's commands for the client's requests
 * (ScopedCollection), summed: commands run side by side count each.
 */
interface TimeShare {
  ms: number;
  at: number;
}

/** Seconds of CLIENT_RESPONSE_BYTES_PER_SECOND (and of CLIENT_DATABASE_MS_PER_SECOND) a client may spend at once (its burst). */
const BURST_SECONDS = 1;
/** Weight of the newest answer in the running mean size (exponential moving average). */
const MEAN_WEIGHT = 0.25;

/** A client that started or ended a request this recently counts as active (it may send the next). */
const ACTIVE_MS = 1_000;

/** Clients whose share is kept before idle ones are forgotten. */
const MAX_SHARES = 10_000;

/**
 * Requests of a client refused before its last Retry-After ran out that are tolerated per refusal
 * window, as a multiple of CLIENT_MAX_CONCURRENT_REQUESTS: a client's other connections were not
 * told to wait, and each may be refused in turn. Beyond that the client ignores Retry-After.
 */
const TOLERATED_EARLY_RETURNS_PER_SLOT = 2;
/** What each further early request costs the client's byte share, in seconds of its rate. */
const IGNORED_RETRY_AFTER_COST_S = 0.05;
/** The deepest a client's byte share goes (seconds of its rate): its longest Retry-After. */
const MAX_DEBT_S = 30;

/** The client's last refusal: when it was told to come back, and how many came back sooner. */
interface Refusal {
  until: number;
  early: number;
}

/** What the guard holds for one admitted request. */
export interface ClientSlot {
  /** Gives the slot back (once), and the reservation of a request that sent no reply. */
  release(): void;
  /** Counts the reply's bytes against the client's share, in place of the reservation. */
  charge(bytes: number): void;
  /**
   * Counts stored bytes the engine read for the request but that its answer does not hold (the
   * rows a byte-budgeted page looked at and left out) against the client's share, while another
   * client is active: its cost to the others is the engine's work, not only the bytes it is sent.
   */
  chargeUnservedReads(bytes: number): void;
  /**
   * Counts database time spent for the request against the client's database-time share
   * (CLIENT_DATABASE_MS_PER_SECOND), while another client is active: queries that are slow but
   * answer little hold the read lanes all the same, so they are refused (429) before they hold all.
   */
  chargeDatabaseMs(ms: number): void;
}

/**
 * Per-client fairness of this process. Every tenant shares one event loop, whose
 * cost grows with the bytes served (BSON decoding, building and writing the answer), so two limits:
 * - FHIR requests in flight (CLIENT_MAX_CONCURRENT_REQUESTS), while another client is active (has
 *   a request in flight, or had one within ACTIVE_MS): the next one is answered 429 with
 *   Retry-After at once instead of queueing in front of every other tenant. A client alone on the
 *   server is not capped: refusing it would leave the server idle (work-conserving);
 * - response bytes per second (CLIENT_RESPONSE_BYTES_PER_SECOND, a token bucket with a burst of
 *   BURST_SECONDS): a client that was served more than its share gets 429 with Retry-After until
 *   the share has refilled. Each admitted request reserves the client's mean answer size at once,
 *   so a client of large answers cannot start many at the same moment either. A client reading
 *   large resources in a loop thus takes a bounded part of the event loop, and a client of small
 *   resources never meets the limit. Like a quota of "cost points" per tenant (Medplum's
 *   fhirQuota, Azure's request units), counted in bytes.
 */
@Injectable()
export class ClientConcurrency {
  private readonly inFlight = new Map<string, number>();
  private readonly shares = new Map<string, ByteShare>();
  private readonly databaseShares = new Map<string, TimeShare>();
  /** When each client last started or ended a request (ms). */
  private readonly lastActive = new Map<string, number>();
  private readonly refusals = new Map<string, Refusal>();

  constructor(@Inject(SETTINGS) private readonly settings: Settings) {}

  /**
   * Takes a slot for the client (throws 429 when none is free or its byte share is spent) and
   * reserves its mean answer size from the share.
   */
  acquire(clientId: string, now = Date.now()): ClientSlot {
    const refused = this.refusal(clientId, now);
    if (refused) throw refused;
    const current = this.inFlight.get(clientId) ?? 0;
    const rate = this.settings.clientResponseBytesPerSecond;
    const share = this.shareNow(clientId, now);
    this.inFlight.set(clientId, current + 1);
    let reserved = rate > 0 ? share.meanBytes : 0;
    this.spend(clientId, reserved, undefined, now);
    let released = false;
    return {
      charge: (bytes) => {
        if (rate <= 0) return;
        this.spend(clientId, bytes - reserved, bytes);
        reserved = 0;
      },
      chargeUnservedReads: (bytes) => {
        // alone on the server, nobody waits for the engine: work-conserving, as the in-flight cap
        if (rate <= 0 || bytes <= 0 || !this.othersActive(clientId, Date.now())) return;
        this.spend(clientId, bytes);
      },
      chargeDatabaseMs: (ms) => {
        if (this.settings.clientDatabaseMsPerSecond <= 0 || !(ms > 0)) return;
        const now = Date.now();
        if (!this.othersActive(clientId, now)) return;
        this.databaseShares.set(clientId, { ms: this.databaseShareNow(clientId, now) - ms, at: now });
        if (this.databaseShares.size > MAX_SHARES) this.forgetIdle(now);
      },
      release: () => {
        if (released) return;
        released = true;
        if (reserved > 0) this.spend(clientId, -reserved);
        reserved = 0;
        this.lastActive.set(clientId, Date.now());
        const remaining = (this.inFlight.get(clientId) ?? 1) - 1;
        if (remaining <= 0) this.inFlight.delete(clientId);
        else this.inFlight.set(clientId, remaining);
      },
    };
  }

  /**
   * The 429 a request of the client gets now (at its in-flight cap while others are active, or
   * its byte share spent), or undefined when it may run; nothing is taken. Cheap and from memory:
   * admission's early refusal (early-refusal.ts) asks it before the request is logged or routed.
   * A client that keeps sending before its Retry-After ran out (more than its other connections
   * explain) pays for each such request from its byte share, so its Retry-After grows (up to
   * MAX_DEBT_S) instead of its refusals costing the server a steady stream of work.
   */
  refusal(clientId: string, now = Date.now()): OperationOutcomeError | undefined {
    const limit = this.settings.clientMaxConcurrentRequests;
    const contended = this.othersActive(clientId, now);
    this.lastActive.set(clientId, now);
    const atCap = (this.inFlight.get(clientId) ?? 0) >= limit && contended;
    const rate = this.settings.clientResponseBytesPerSecond;
    const databaseMs = this.databaseShareNow(clientId, now);
    if (!atCap && this.shareNow(clientId, now).bytes > 0 && databaseMs > 0) return undefined;
    // a refusal window opens with a refusal and lasts its Retry-After; refusals within it are early
    const last = this.refusals.get(clientId);
    const open = last !== undefined && now < last.until ? last : undefined;
    const early = open ? open.early + 1 : 0;
    if (early > limit * TOLERATED_EARLY_RETURNS_PER_SLOT && rate > 0) {
      const floor = -rate * MAX_DEBT_S;
      const share = this.shareNow(clientId, now);
      const cost = Math.min(rate * IGNORED_RETRY_AFTER_COST_S, Math.max(0, share.bytes - floor));
      this.spend(clientId, cost, undefined, now);
    }
    const debt = -this.shareNow(clientId, now).bytes;
    const databaseRate = this.settings.clientDatabaseMsPerSecond;
    const databaseDebt = databaseRate > 0 && databaseMs <= 0 ? -databaseMs : undefined;
    const retryAfter = Math.max(
      debt >= 0 && rate > 0 ? Math.max(1, Math.ceil(debt / rate)) : 1,
      databaseDebt === undefined ? 1 : Math.max(1, Math.ceil(databaseDebt / databaseRate)),
    );
    this.refusals.set(
      clientId,
      open ? { until: open.until, early } : { until: now + retryAfter * 1000, early },
    );
    if (this.refusals.size > MAX_SHARES) this.forgetIdle(now);
    if (databaseDebt !== undefined && !(debt >= 0 && rate > 0)) {
      return throttled(
        `this client used more than its share of ${databaseRate} ms of database time per second (CLIENT_DATABASE_MS_PER_SECOND); retry later`,
        retryAfter,
      );
    }
    return debt >= 0 && rate > 0
      ? throttled(
          `this client was served more than its share of ${rate} response bytes per second (CLIENT_RESPONSE_BYTES_PER_SECOND); retry later`,
          retryAfter,
        )
      : throttled(
          `this client already has ${limit} FHIR requests in progress (CLIENT_MAX_CONCURRENT_REQUESTS); retry shortly`,
          retryAfter,
        );
  }

  /**
   * Whether another client has a request in flight or had one within ACTIVE_MS: only then does the
   * in-flight cap engage (work-conserving: a client alone on the server may use all of it, and
   * the lanes' fair queue orders its requests; the cap keeps room for others once they come).
   */
  private othersActive(clientId: string, now: number): boolean {
    for (const other of this.inFlight.keys()) if (other !== clientId) return true;
    let found = false;
    for (const [other, at] of this.lastActive) {
      if (now - at > ACTIVE_MS) this.lastActive.delete(other);
      else if (other !== clientId) found = true;
    }
    return found;
  }

  /** Takes `bytes` from the client's share (it may go below zero: its next request waits). */
  private spend(clientId: string, bytes: number, answerBytes?: number, now = Date.now()): void {
    if (this.settings.clientResponseBytesPerSecond <= 0 || (bytes === 0 && answerBytes === undefined)) return;
    const share = this.shareNow(clientId, now);
    const meanBytes =
      answerBytes === undefined
        ? share.meanBytes
        : share.meanBytes + MEAN_WEIGHT * (answerBytes - share.meanBytes);
    this.shares.set(clientId, { bytes: share.bytes - bytes, at: now, meanBytes });
    if (this.shares.size > MAX_SHARES) this.forgetIdle(now);
  }

  /** Shares untouched for a minute are full again; only their mean size is lost. */
  private forgetIdle(now: number): void {
    for (const [clientId, share] of this.shares) if (now - share.at > 60_000) this.shares.delete(clientId);
    for (const [clientId, refusal] of this.refusals) if (refusal.until < now) this.refusals.delete(clientId);
    for (const [clientId, share] of this.databaseShares)
      if (now - share.at > 60_000) this.databaseShares.delete(clientId);
  }

  /** The client's database-time share now (ms): refilled at its rate, at most the burst. */
  private databaseShareNow(clientId: string, now: number): number {
    const rate = this.settings.clientDatabaseMsPerSecond;
    if (!(rate > 0)) return Infinity;
    const burst = rate * BURST_SECONDS;
    const share = this.databaseShares.get(clientId);
    if (!share) return burst;
    return Math.min(burst, share.ms + (rate * Math.max(0, now - share.at)) / 1000);
  }

  /** The client's share now: refilled at the rate since it was last counted, at most the burst. */
  private shareNow(clientId: string, now: number): ByteShare {
    const rate = this.settings.clientResponseBytesPerSecond;
    const burst = rate * BURST_SECONDS;
    if (rate <= 0) return { bytes: Infinity, at: now, meanBytes: 0 };
    const share = this.shares.get(clientId);
    if (!share) return { bytes: burst, at: now, meanBytes: 0 };
    const bytes = Math.min(burst, share.bytes + (rate * Math.max(0, now - share.at)) / 1000);
    return { bytes, at: now, meanBytes: share.meanBytes };
  }
}

function throttled(message: string, retryAfterSeconds: number): OperationOutcomeError {
  return new OperationOutcomeError('throttled', message, {
    status: 429,
    headers: { 'Retry-After': String(retryAfterSeconds) },
  });
}
