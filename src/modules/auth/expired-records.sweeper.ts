import { Injectable, Logger, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { RateLimitRepository } from './rate-limit/rate-limit.repository';
import { GrantsRepository } from './tokens/grants.repository';

const SWEEP_INTERVAL_MS = 10 * 60_000;

/**
 * Deletes expired authorization codes, refresh tokens and rate-limit windows every 10 minutes.
 * A TTL index would do this on MongoDB, but FerretDB 1.x rejects `expireAfterSeconds`; every
 * read checks expiry itself, so this is only about storage.
 */
@Injectable()
export class ExpiredRecordsSweeper implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger('ExpiredRecordsSweeper');
  private timer?: NodeJS.Timeout;

  constructor(
    private readonly grants: GrantsRepository,
    private readonly rateLimits: RateLimitRepository,
  ) {}

  onApplicationBootstrap(): void {
    this.timer = setInterval(() => void this.sweep(), SWEEP_INTERVAL_MS);
    this.timer.unref();
  }

  onApplicationShutdown(): void {
    if (this.timer) clearInterval(this.timer);
  }

  async sweep(now = new Date()): Promise<number> {
    try {
      const removed = (await this.grants.deleteExpired(now)) + (await this.rateLimits.deleteExpired(now));
      if (removed > 0) this.logger.debug(`removed ${removed} expired codes, tokens and rate-limit windows`);
      return removed;
    } catch (err) {
      this.logger.warn({ err }, 'sweeping expired records failed; retrying at the next interval');
      return 0;
    }
  }
}
