import { HttpException, Inject, Injectable } from '@nestjs/common';
import { SETTINGS } from '../../../config/config.module';
import { Settings } from '../../../config/settings';
import { FailurePacing, PacingRefusal } from './failure-pacing';
import { FailureSlots, type SlotCounter } from './failure-slots';
import { RateLimitRepository } from './rate-limit.repository';

const HOUR_MS = 3600_000;
/** Addresses whose last refusal is remembered (the oldest go first). */
const MAX_REFUSED_ADDRESSES = 10_000;

/** 429 with Retry-After (RFC 6585 §4); answered as `{ error, message }` by the global filter. */
export class TooManyRequests extends HttpException {
  readonly headers: Record<string, string>;
  constructor(message: string, retryAfterSeconds: number) {
    super({ error: 'too_many_requests', message }, 429);
    this.headers = { 'Retry-After': String(retryAfterSeconds) };
  }
}

/**
 * Fixed-window counters in the database (shared by every instance):
 * - user-management calls per client per hour (USER_MGMT_RATE_LIMIT), counted after the client
 *   authenticated, so nobody else can spend a client's allowance; user tokens count per user;
 * - failed client authentications per (client id, source address) and per source address, in
 *   short windows (AUTH_FAILURE_WINDOW): see docs/security.md "Throttling failed client
 *   authentication". A client's owner is never refused because of failures from elsewhere.
 */
@Injectable()
export class RateLimitService {
  private readonly slots = new FailureSlots();
  /** The last refusal of each address in its window: its message and the window's end (ms). */
  private readonly refusedAddresses = new Map<string, { message: string; until: number }>();
  private readonly pacing: FailurePacing;

  constructor(
    @Inject(SETTINGS) private readonly settings: Settings,
    private readonly repo: RateLimitRepository,
  ) {
    this.pacing = new FailurePacing(settings.authFailureWindowSeconds * 1000);
  }

  /**
   * Counts one user-management call; throws 429 once over the hourly limit. `userId` set (a user
   * token): the user's own allowance, so that an end user cannot spend the application's.
   */
  async hitUserManagement(clientId: string, userId?: number): Promise<void> {
    const who = userId === undefined ? clientId : `${clientId}|u${userId}`;
    const { key, expiresAt, retryAfter } = window('um', who, HOUR_MS);
    const n = await this.repo.increment(key, expiresAt);
    if (n > this.settings.userMgmtRateLimitPerHour) {
      throw new TooManyRequests(
        `more than ${this.settings.userMgmtRateLimitPerHour} user-management calls this hour`,
        retryAfter,
      );
    }
  }

  /**
   * Takes a failure slot of this source before its secret (or assertion) is checked: one of the
   * (client id, address) pair and one of the address. Throws 429 when either is spent this window.
   * Refused from memory without asking the database when this process knows the source is
   * throttled; otherwise the database counters are incremented first (atomic `$inc`), so across
   * instances no more than the limit are ever checked. Settle the attempt once: `failed()` keeps the
   * slot (a failure), `release()` gives it back (right secret, or the check never ran).
   */
  async reserveAuthAttempt(clientId: string, address: string): Promise<AuthAttempt> {
    const { pair, source, counters, refused } = this.authCounters(clientId, address);
    if (this.slots.spent(counters)) throw refused();
    const paced = this.pacing.refusalNow(pair.key);
    if (paced) throw this.pacedRefusal(address, paced);
    if (!this.slots.take(counters)) throw refused();
    let counts: number[];
    try {
      counts = await Promise.all([
        this.repo.increment(pair.key, pair.expiresAt),
        this.repo.increment(source.key, source.expiresAt),
      ]);
    } catch (error) {
      this.slots.giveBack(counters);
      throw error;
    }
    const spent = counters.filter((c, i) => counts[i] > c.limit);
    if (spent.length > 0) {
      // spent by other instances (or before a restart): remembered here for the rest of the window
      for (const c of spent) this.slots.fill(c);
      this.slots.giveBack(counters.filter((c) => !spent.includes(c)));
      throw refused();
    }
    let settled = false;
    return {
      failed: () => {
        settled = true;
      },
      release: async () => {
        if (settled) return;
        settled = true;
        this.slots.giveBack(counters);
        await Promise.all([this.repo.decrement(pair.key), this.repo.decrement(source.key)]);
      },
    };
  }

  /**
   * Runs a secret's verification (`verify`, whose answer `failed` judges) at the pace of its
   * (client id, address) pair in the current failure window (FailurePacing): 429 with Retry-After
   * instead when the pair has to wait. Call it with a reserved attempt; on a 429 give the attempt
   * back (nothing was verified).
   */
  async paced<T>(
    clientId: string,
    address: string,
    verify: () => Promise<T>,
    failed: (answer: T) => boolean,
  ): Promise<T> {
    const { pair } = this.authCounters(clientId, address);
    const answer = await this.pacing.paced(pair.key, verify, failed);
    if (answer instanceof PacingRefusal) throw this.pacedRefusal(address, answer);
    return answer;
  }

  /**
   * The 429 this process already knows a source gets (a counter of its window is spent, or its
   * address must wait for its pace), or undefined; synchronous, from memory, nothing taken.
   * Admission's early refusal asks it before a request is logged, routed or its body parsed.
   */
  knownRefusal(clientId: string, address: string): TooManyRequests | undefined {
    const { pair, counters, refused } = this.authCounters(clientId, address);
    if (this.slots.spent(counters)) return refused();
    const paced = this.pacing.refusalNow(pair.key);
    return paced && this.pacedRefusal(address, paced);
  }

  /** The 429 of a source that must wait for its pace; the address is remembered so its next token form is read early. */
  private pacedRefusal(address: string, { retryAfterSeconds }: PacingRefusal): TooManyRequests {
    const message =
      'failed client authentications of this client from this address are checked one a second; retry later';
    this.rememberRefused(address, message, Date.now() + retryAfterSeconds * 1000);
    return new TooManyRequests(message, retryAfterSeconds);
  }

  /**
   * The 429 this address was last given in its current window (one of its counters spent), or
   * undefined; from memory. Admission's early refusal reads a token request's form body ahead of
   * the pipeline only for such an address, to ask `knownRefusal` about the credentials in it.
   */
  refusedLately(address: string, now = Date.now()): TooManyRequests | undefined {
    const last = this.refusedAddresses.get(address);
    if (!last) return undefined;
    if (last.until <= now) {
      this.refusedAddresses.delete(address);
      return undefined;
    }
    return new TooManyRequests(last.message, Math.max(1, Math.ceil((last.until - now) / 1000)));
  }

  private rememberRefused(address: string, message: string, until: number): void {
    // a window's refusal outlasts a pace's: the shorter one does not replace it
    const last = this.refusedAddresses.get(address);
    if (last && last.until > until) return;
    this.refusedAddresses.delete(address);
    this.refusedAddresses.set(address, { message, until });
    if (this.refusedAddresses.size > MAX_REFUSED_ADDRESSES) {
      this.refusedAddresses.delete(this.refusedAddresses.keys().next().value!);
    }
  }

  /** The failure counters of a source: its (client id, address) pair, and its address. */
  private authCounters(clientId: string, address: string) {
    const windowMs = this.settings.authFailureWindowSeconds * 1000;
    const pair = window('authfail', `${clientId}|${address}`, windowMs);
    const source = window('authfail-addr', address, windowMs);
    const counters: SlotCounter[] = [
      { key: pair.key, limit: this.settings.authFailureLimit, until: pair.expiresAt.getTime() },
      { key: source.key, limit: this.settings.authFailureLimitPerAddress, until: source.expiresAt.getTime() },
    ];
    const message = 'too many failed client authentications from this address; retry later';
    const refused = () => {
      this.rememberRefused(address, message, pair.expiresAt.getTime());
      return new TooManyRequests(message, pair.retryAfter);
    };
    return { pair, source, counters, refused };
  }
}

/** A failure slot taken for one authentication attempt (see reserveAuthAttempt). */
export interface AuthAttempt {
  /** The credentials were wrong: the slot stays spent. */
  failed(): void;
  /** The credentials were right, or were never checked: the slot is given back. */
  release(): Promise<void>;
}

function window(bucket: string, who: string, windowMs: number, now = Date.now()) {
  const start = Math.floor(now / windowMs) * windowMs;
  return {
    key: `${bucket}|${who}|${start}`,
    expiresAt: new Date(start + windowMs),
    retryAfter: Math.max(1, Math.ceil((start + windowMs - now) / 1000)),
  };
}
