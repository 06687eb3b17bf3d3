import { HttpException, Inject, Injectable } from '@nestjs/common';
import { SETTINGS } from '../../../config/config.module';
import { Settings } from '../../../config/settings';
import { RateLimitRepository } from './rate-limit.repository';

const HOUR_MS = 3600_000;

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
  constructor(
    @Inject(SETTINGS) private readonly settings: Settings,
    private readonly repo: RateLimitRepository,
  ) {}

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

  /** Throws 429 when this source has failed too often this window, for this client or for any. */
  async checkAuthFailures(clientId: string, address: string): Promise<void> {
    const windowMs = this.settings.authFailureWindowSeconds * 1000;
    const pair = window('authfail', `${clientId}|${address}`, windowMs);
    const source = window('authfail-addr', address, windowMs);
    const [forPair, forSource] = await Promise.all([this.repo.count(pair.key), this.repo.count(source.key)]);
    if (forPair >= this.settings.authFailureLimit || forSource >= this.settings.authFailureLimitPerAddress) {
      throw new TooManyRequests(
        'too many failed client authentications from this address; retry later',
        pair.retryAfter,
      );
    }
  }

  async recordAuthFailure(clientId: string, address: string): Promise<void> {
    const windowMs = this.settings.authFailureWindowSeconds * 1000;
    const pair = window('authfail', `${clientId}|${address}`, windowMs);
    const source = window('authfail-addr', address, windowMs);
    await Promise.all([
      this.repo.increment(pair.key, pair.expiresAt),
      this.repo.increment(source.key, source.expiresAt),
    ]);
  }
}

function window(bucket: string, who: string, windowMs: number, now = Date.now()) {
  const start = Math.floor(now / windowMs) * windowMs;
  return {
    key: `${bucket}|${who}|${start}`,
    expiresAt: new Date(start + windowMs),
    retryAfter: Math.max(1, Math.ceil((start + windowMs - now) / 1000)),
  };
}
