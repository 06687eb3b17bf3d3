import { Injectable } from '@nestjs/common';
import { InjectConnection } from '@nestjs/mongoose';
import { HealthIndicatorResult, HealthIndicatorService } from '@nestjs/terminus';
import type { Connection } from 'mongoose';

/**
 * A real round trip to the database. Terminus' own Mongoose indicator only reads the driver's
 * `readyState`, which stays "connected" for a while after the server has gone away.
 */
@Injectable()
export class DatabasePingIndicator {
  constructor(
    private readonly indicators: HealthIndicatorService,
    @InjectConnection() private readonly connection: Connection,
  ) {}

  async ping(key: string, timeoutMs: number): Promise<HealthIndicatorResult> {
    const check = this.indicators.check(key);
    let timer: NodeJS.Timeout | undefined;
    try {
      const db = this.connection.db;
      if (!db) return check.down({ message: 'not connected' });
      await Promise.race([
        db.admin().ping(),
        new Promise((_, reject) => (timer = setTimeout(() => reject(new Error('timeout')), timeoutMs))),
      ]);
      return check.up();
    } catch (e) {
      return check.down({ message: (e as Error).message });
    } finally {
      clearTimeout(timer);
    }
  }
}
