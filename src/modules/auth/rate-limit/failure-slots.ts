/** One counter of a fixed window: `limit` slots, spent by failures and by attempts in progress. */
export interface SlotCounter {
  key: string;
  limit: number;
  /** When the window ends (ms since the epoch): the counter is forgotten then. */
  until: number;
}

/** Counters kept before those of ended windows are dropped (then the oldest). */
const MAX_COUNTERS = 100_000;

/**
 * In-process failure counters of the current windows (docs/security.md "Throttling failed client
 * authentication"). A slot is taken synchronously before a secret is verified, so no interleaving
 * of concurrent requests can verify more secrets than the limit, and a throttled source is refused
 * from memory, before the database and before scrypt. The database counters stay the arbiter
 * between instances; these only let this process say "no" without asking.
 */
export class FailureSlots {
  private readonly counters = new Map<string, { n: number; until: number }>();

  constructor(private readonly now: () => number = Date.now) {}

  /** Slots taken in the counter's window (failures plus attempts in progress). */
  count(key: string): number {
    const entry = this.counters.get(key);
    return entry && entry.until > this.now() ? entry.n : 0;
  }

  /** True when a counter has no slot free (the source is throttled). */
  spent(counters: readonly SlotCounter[]): boolean {
    return counters.some((c) => this.count(c.key) >= c.limit);
  }

  /** Takes one slot of every counter when each has one free; otherwise takes none → false. */
  take(counters: readonly SlotCounter[]): boolean {
    if (this.spent(counters)) return false;
    for (const c of counters) this.add(c, 1);
    return true;
  }

  /** Gives back a slot taken by `take` (the attempt succeeded or never ran). */
  giveBack(counters: readonly SlotCounter[]): void {
    for (const c of counters) this.add(c, -1);
  }

  /** Marks the counter full until its window ends (another instance spent it). */
  fill(counter: SlotCounter): void {
    this.add(counter, Math.max(0, counter.limit - this.count(counter.key)));
  }

  private add(counter: SlotCounter, delta: number): void {
    const n = Math.max(0, this.count(counter.key) + delta);
    this.counters.delete(counter.key);
    if (n > 0) this.counters.set(counter.key, { n, until: counter.until });
    if (this.counters.size > MAX_COUNTERS) this.prune();
  }

  private prune(): void {
    const now = this.now();
    for (const [key, entry] of this.counters) if (entry.until <= now) this.counters.delete(key);
    // still full: the oldest entries go first (Map keeps insertion order)
    for (const key of this.counters.keys()) {
      if (this.counters.size <= MAX_COUNTERS) break;
      this.counters.delete(key);
    }
  }
}
