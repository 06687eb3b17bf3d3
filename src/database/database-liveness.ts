import { Inject, Injectable } from '@nestjs/common';
import { InjectConnection } from '@nestjs/mongoose';
import type { Connection } from 'mongoose';
import { SETTINGS } from '../config/config.module';
import { Settings } from '../config/settings';

/**
 * Server selection gets a quarter of DB_TIMEOUT_MS. The operation's own deadline (CSOT
 * `timeoutMS`) bounds its first selection, but when an attempt fails with a retryable error the
 * driver selects the server for the retry without that deadline, on `serverSelectionTimeoutMS`
 * alone (mongodb 6.22, operations/execute_operation.js `tryOperation`). That is what a hung
 * database does: a connection being opened times out, the pool is cleared, every request waiting
 * for a connection retries, and the server is unknown by then. With the whole DB_TIMEOUT_MS there,
 * such requests answered after two deadlines (test/database-hang.e2e-spec.ts); with a quarter,
 * within 1.25 of one. A database that is known to be away is thus reported sooner, too.
 * With CSOT the wait for a pooled connection shares this bound, so a request must not wait for the
 * pool while the database is merely busy: request admission (src/admission/request-admission.ts)
 * keeps FHIR requests well under maxPoolSize and does the waiting itself.
 */
export function serverSelectionTimeoutMs(dbTimeoutMs: number): number {
  return Math.max(100, Math.floor(dbTimeoutMs / 4));
}

/**
 * Whether the database is answering, told apart from whether it is busy (request admission,
 * src/admission/admission-lane.ts). A busy database still completes requests, only each takes
 * longer; a hung or dead one completes none (each ends in a 5xx at its deadline). So: the time an
 * admitted request was last answered without a server error (`noteAnswer`, no extra round trip),
 * and, when none came for a while, one shared ping with a short deadline to ask the database.
 * Not the driver's command events: with `monitorCommands` on, the driver decodes every reply once
 * more for the event (measured: a 50-document page +35–65% client CPU).
 */
@Injectable()
export class DatabaseLiveness {
  private answeredAt = Date.now();
  private probing?: Promise<boolean>;
  /** A ping that takes longer than this counts as no answer: a quarter of DB_TIMEOUT_MS. */
  readonly probeTimeoutMs: number;

  constructor(
    @InjectConnection() private readonly connection: Connection,
    @Inject(SETTINGS) settings: Settings,
  ) {
    this.probeTimeoutMs = serverSelectionTimeoutMs(settings.dbTimeoutMs);
  }

  /** A request that used the database was answered without a server error. */
  noteAnswer(): void {
    this.answeredAt = Date.now();
  }

  /** When the database last answered (ms since the epoch). */
  lastAnswerAt(): number {
    return this.answeredAt;
  }

  /**
   * Asks the database with a ping: true when it answers within probeTimeoutMs. Callers at the same
   * time share one ping; an answer also moves lastAnswerAt.
   */
  probe(): Promise<boolean> {
    this.probing ??= this.ping().finally(() => (this.probing = undefined));
    return this.probing;
  }

  private async ping(): Promise<boolean> {
    const db = this.connection.db;
    if (!db) return false;
    let timer: NodeJS.Timeout | undefined;
    try {
      await Promise.race([
        db.command({ ping: 1 }, { timeoutMS: this.probeTimeoutMs }),
        new Promise((_, reject) => {
          timer = setTimeout(() => reject(new Error('no answer')), this.probeTimeoutMs);
        }),
      ]);
      return true;
    } catch {
      return false;
    } finally {
      clearTimeout(timer);
    }
  }
}
