import { Injectable, Logger, OnModuleInit } from '@nestjs/common';
import { InjectConnection } from '@nestjs/mongoose';
import type { Connection } from 'mongoose';
import { DatabaseLiveness } from '../database/database-liveness';

/** The collection read by the check: every deployment has it (client applications). */
const PROBED_COLLECTION = 'clients';
/** Under load, one read serves every health request of this long. */
const CACHE_MS = 1000;
/** Health requests within CACHE_MS from which on they count as load (a prober asks far less often). */
const LOAD_REQUESTS = 10;

/**
 * Whether the database can serve: a real read of one document of a collection, within the
 * liveness probe's deadline (DB_TIMEOUT_MS / 4, src/database/database-liveness.ts). A `ping` is
 * answered by DocumentDB's gateway alone, so it says nothing about the PostgreSQL behind it; a read
 * goes all the way. Concurrent checks share one read. Under load (LOAD_REQUESTS or more within
 * CACHE_MS) a result is reused for CACHE_MS, except that the driver losing the server (its monitor
 * marks it unknown, or the pool is cleared) drops it at once; a prober asking now and then always
 * gets a fresh read, so a database stopped a moment ago is never reported up.
 */
@Injectable()
export class DatabaseReadCheck implements OnModuleInit {
  readonly deadlineMs: number;
  private last?: { at: number; problem?: Error };
  private running?: Promise<Error | undefined>;
  private lastProblem?: string;
  private window = { start: 0, requests: 0 };
  private readonly logger = new Logger('Health');

  constructor(
    @InjectConnection() private readonly connection: Connection,
    liveness: DatabaseLiveness,
  ) {
    this.deadlineMs = liveness.probeTimeoutMs;
  }

  onModuleInit(): void {
    const client = this.connection.getClient();
    const forget = () => (this.last = undefined);
    client.on('connectionPoolCleared', forget);
    client.on('serverDescriptionChanged', (e) => {
      if (e.newDescription.type === 'Unknown') forget();
    });
  }

  /** The error that keeps the database from serving now, or undefined when it serves. */
  async problem(): Promise<Error | undefined> {
    const now = Date.now();
    if (now - this.window.start >= CACHE_MS) this.window = { start: now, requests: 0 };
    this.window.requests += 1;
    const loaded = this.window.requests >= LOAD_REQUESTS;
    if (loaded && this.last && now - this.last.at < CACHE_MS) return this.last.problem;
    this.running ??= this.read()
      .then((problem) => {
        this.last = { at: Date.now(), problem };
        // logged when it changes, not once per request
        const text = problem && `${problem.name}: ${problem.message.split('\n')[0]}`;
        if (text && text !== this.lastProblem) this.logger.warn(`database cannot serve: ${text}`);
        if (!text && this.lastProblem) this.logger.log('database serves again');
        this.lastProblem = text;
        return problem;
      })
      .finally(() => (this.running = undefined));
    return this.running;
  }

  private async read(): Promise<Error | undefined> {
    const db = this.connection.db;
    if (!db) return new Error('not connected');
    let timer: NodeJS.Timeout | undefined;
    try {
      await Promise.race([
        db.collection(PROBED_COLLECTION).findOne({}, { projection: { _id: 1 }, timeoutMS: this.deadlineMs }),
        // the driver's own deadline names its error; this one only bounds a driver that overruns
        new Promise((_, reject) => {
          timer = setTimeout(
            () => reject(new Error(`no answer within ${this.deadlineMs} ms`)),
            this.deadlineMs + 250,
          );
        }),
      ]);
      return undefined;
    } catch (e) {
      return e as Error;
    } finally {
      clearTimeout(timer);
    }
  }
}
