import { HttpException, Inject, Injectable } from '@nestjs/common';
import { SETTINGS } from '../../../config/config.module';
import { Settings } from '../../../config/settings';
import { RateLimitRepository } from './rate-limit.repository';

const WINDOW_MS = 3600_000;

/** 429 with Retry-After (RFC 6585 §4); answered as `{ error, message }` by the global filter. */
export class TooManyRequests extends HttpException {
  readonly headers: Record<string, string>;
  constructor(message: string, retryAfterSeconds: number) {
    super({ error: 'too_many_requests', message }, 429);
    this.headers = { 'Retry-After': String(retryAfterSeconds) };
  }
}

/**
 * Per-client fixed one-hour windows: user-management calls (USER_MGMT_RATE_LIMIT) and failed
 * token-endpoint client authentications (TOKEN_FAILURE_LIMIT, against secret guessing).
 */
@Injectable()
export class RateLimitService {
  constructor(
    @Inject(SETTINGS) private readonly settings: Settings,
    private readonly repo: RateLimitRepository,
  ) {}

  /** Counts one user-management call; throws 429 once the client is over its hourly limit. */
  async hitUserManagement(clientId: string): Promise<void> {
    const { key, expiresAt, retryAfter } = window('um', clientId);
    const n = await this.repo.increment(key, expiresAt);
    if (n > this.settings.userMgmtRateLimitPerHour) {
      throw new TooManyRequests(
        `more than ${this.settings.userMgmtRateLimitPerHour} user-management calls this hour`,
        retryAfter,
      );
    }
  }

  /** Throws 429 when this client id has had too many failed authentications this hour. */
  async checkAuthFailures(clientId: string): Promise<void> {
    const { key, retryAfter } = window('authfail', clientId);
    if ((await this.repo.count(key)) >= this.settings.tokenFailureLimitPerHour) {
      throw new TooManyRequests('too many failed client authentications this hour', retryAfter);
    }
  }

  async recordAuthFailure(clientId: string): Promise<void> {
    const { key, expiresAt } = window('authfail', clientId);
    await this.repo.increment(key, expiresAt);
  }
}

function window(bucket: string, clientId: string, now = Date.now()) {
  const start = Math.floor(now / WINDOW_MS) * WINDOW_MS;
  return {
    key: `${bucket}|${clientId}|${start}`,
    expiresAt: new Date(start + WINDOW_MS),
    retryAfter: Math.max(1, Math.ceil((start + WINDOW_MS - now) / 1000)),
  };
}
