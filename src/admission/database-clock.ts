import { performance } from 'node:perf_hooks';

/**
 * Database time per command as a processor-sharing server would give it (docs/security.md "The
 * cost budget"): the engine works on every running command at once, so over each stretch of time
 * between one command starting or ending and the next, each of the N commands running had 1/N of
 * it. A command's share is the sum of those parts, and a caller is charged the shares of its
 * commands. Summing their wall-clock time instead charged a caller for the others' load (a victim's
 * read that waits behind a flood of writes is slow because of the flood) and a request N times for
 * N commands it sent at once (a transaction's inserts): the shares of all commands add up to the
 * time the engine had any command at all, never more.
 *
 * The commands counted are those of admitted FHIR requests (TenantContext.startDatabaseCommand);
 * one clock per process. Constant time per start and end: one running count and one virtual clock
 * (the integral of 1/N over time), a command's share being the virtual time between its start and
 * its end.
 */
export class DatabaseClock {
  private running = 0;
  /** ∫ dt / running, in ms, up to `at`. */
  private virtual = 0;
  private at: number;

  constructor(private readonly now: () => number = () => performance.now()) {
    this.at = now();
  }

  /** A command is sent: returns the function to call once its reply is in, which gives its share (ms). */
  start(): () => number {
    this.advance();
    this.running += 1;
    const from = this.virtual;
    let ended = false;
    return () => {
      if (ended) return 0;
      ended = true;
      this.advance();
      this.running -= 1;
      return this.virtual - from;
    };
  }

  /** Commands running now. */
  get commands(): number {
    return this.running;
  }

  private advance(): void {
    const now = this.now();
    if (this.running > 0 && now > this.at) this.virtual += (now - this.at) / this.running;
    this.at = Math.max(this.at, now);
  }
}
