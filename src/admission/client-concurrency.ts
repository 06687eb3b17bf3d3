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

/** Seconds of CLIENT_RESPONSE_BYTES_PER_SECOND a client may spend at once (its burst). */
const BURST_SECONDS = 1;
/** Weight of the newest answer in the running mean size (exponential moving average). */
const MEAN_WEIGHT = 0.25;

/** A client that started or ended a request this recently counts as active (it may send the next). */
const ACTIVE_MS = 1_000;

/** Clients whose share is kept before idle ones are forgotten. */
const MAX_SHARES = 10_000;

/** What the guard holds for one admitted request. */
export interface ClientSlot {
  /** Gives the slot back (once), and the reservation of a request that sent no reply. */
  release(): void;
  /** Counts the reply's bytes against the client's share, in place of the reservation. */
  charge(bytes: number): void;
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
  /** When each client last started or ended a request (ms). */
  private readonly lastActive = new Map<string, number>();

  constructor(@Inject(SETTINGS) private readonly settings: Settings) {}

  /**
   * Takes a slot for the client (throws 429 when none is free or its byte share is spent) and
   * reserves its mean answer size from the share.
   */
  acquire(clientId: string, now = Date.now()): ClientSlot {
    const current = this.inFlight.get(clientId) ?? 0;
    const limit = this.settings.clientMaxConcurrentRequests;
    const contended = this.othersActive(clientId, now);
    this.lastActive.set(clientId, now);
    if (current >= limit && contended) {
      throw throttled(
        `this client already has ${limit} FHIR requests in progress (CLIENT_MAX_CONCURRENT_REQUESTS); retry shortly`,
        1,
      );
    }
    const rate = this.settings.clientResponseBytesPerSecond;
    const share = this.shareNow(clientId, now);
    if (share.bytes <= 0) {
      throw throttled(
        `this client was served more than its share of ${rate} response bytes per second (CLIENT_RESPONSE_BYTES_PER_SECOND); retry later`,
        Math.max(1, Math.ceil(-share.bytes / rate)),
      );
    }
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
