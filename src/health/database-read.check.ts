import { Injectable, Logger, OnModuleInit } from '@nestjs/common';
import { InjectConnection } from '@nestjs/mongoose';
import type { Connection } from 'mongoose';

/** The collection read by the check: every deployment has it (client applications). */
const PROBED_COLLECTION = 'clients';
/** A health check that takes longer than this counts as down. */
export const HEALTH_DEADLINE_MS = 1500;
/** Under load, one read serves every health request of this long. */
const CACHE_MS = 1000;

/**
 * Whether the database can serve: a real read of one document of a collection, with a short
 * deadline. A `ping` is answered by DocumentDB's gateway alone, so it says nothing about the
 * PostgreSQL behind it; a read goes all the way. Concurrent checks share one read, and a result is
 * reused for CACHE_MS, except that the driver losing the server (its monitor marks it unknown, or
 * the pool is cleared) drops it at once.
 */
@Injectable()
export class DatabaseReadCheck implements OnModuleInit {
  private last?: { at: number; problem?: string };
  private running?: Promise<string | undefined>;
  private lastProblem?: string;
  private readonly logger = new Logger('Health');

  constructor(@InjectConnection() private readonly connection: Connection) {}

  onModuleInit(): void {
    const client = this.connection.getClient();
    const forget = () => (this.last = undefined);
    client.on('connectionPoolCleared', forget);
    client.on('serverDescriptionChanged', (e) => {
      if (e.newDescription.type === 'Unknown') forget();
    });
  }

  /** Why the database cannot serve now, or undefined when it can. */
  async problem(): Promise<string | undefined> {
    if (this.last && Date.now() - this.last.at < CACHE_MS) return this.last.problem;
    this.running ??= this.read()
      .then((problem) => {
        this.last = { at: Date.now(), problem };
        // logged when it changes, not once per request: the cause may name hosts, never sent
        if (problem && problem !== this.lastProblem) this.logger.warn(`database cannot serve: ${problem}`);
        if (!problem && this.lastProblem) this.logger.log('database serves again');
        this.lastProblem = problem;
        return problem;
      })
      .finally(() => (this.running = undefined));
    return this.running;
  }

  private async read(): Promise<string | undefined> {
    const db = this.connection.db;
    if (!db) return 'not connected';
    let timer: NodeJS.Timeout | undefined;
    try {
      await Promise.race([
        db
          .collection(PROBED_COLLECTION)
          .findOne({}, { projection: { _id: 1 }, timeoutMS: HEALTH_DEADLINE_MS }),
        new Promise((_, reject) => {
          timer = setTimeout(
            () => reject(new Error(`no answer within ${HEALTH_DEADLINE_MS} ms`)),
            HEALTH_DEADLINE_MS,
          );
        }),
      ]);
      return undefined;
    } catch (e) {
      return `${(e as Error).name}: ${(e as Error).message.split('\n')[0]}`;
    } finally {
      clearTimeout(timer);
    }
  }
}
