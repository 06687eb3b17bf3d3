/**
 * The units a caller's share is counted in (docs/security.md "The cost budget"): what serving it
 * takes from the others. Each has its own rate (per second); a caller past any of them is refused.
 * - `bytes`: FHIR response bytes, stored bytes the engine read but left out of the answer, and
 *   (while another caller contends) request bodies, which the loop reads and decodes
 *   (the event loop's cost grows with them: BSON decoding, building and writing the answer);
 * - `databaseMs`: database time of the caller's commands, summed (a slow small query holds a lane);
 * - `workerMs`: time the caller's FHIRPath held a worker of the shared pool;
 * - `loopMs`: time the caller's request steps held the event loop, which every caller shares (its
 *   body's JSON parse, the walk of the body guard, its long narratives' slices: event-loop-time.ts).
 */
export type CostUnit = 'bytes' | 'databaseMs' | 'workerMs' | 'loopMs';

export const COST_UNITS: readonly CostUnit[] = ['bytes', 'databaseMs', 'workerMs', 'loopMs'];

/** A unit's level for one key: `left` at time `at` (negative: served ahead of its share). */
interface Level {
  left: number;
  at: number;
}

/** Entries kept before those untouched for a minute (full again) are forgotten. */
const MAX_KEYS = 10_000;
const IDLE_MS = 60_000;

/**
 * Token buckets of cost per key (a client, or one user of a client) and unit: each refills at
 * `rate` per second up to `rate × burstSeconds`, may go into debt down to `−rate × maxDebtSeconds`,
 * and is spent while the level is ≤ 0. The rate may differ per call (a user's part of its client's
 * share changes with the users active); the level is then read at the rate given.
 */
export class CostLedger {
  private readonly levels = new Map<string, Level>();

  constructor(private readonly burstSeconds: number) {}

  /** The key's level in `unit` now, refilled at `rate` since it was last counted. Infinity: no limit. */
  level(key: string, unit: CostUnit, rate: number, now: number): number {
    if (!(rate > 0)) return Infinity;
    const burst = rate * this.burstSeconds;
    const level = this.levels.get(`${unit}\n${key}`);
    if (!level) return burst;
    return Math.min(burst, level.left + (rate * Math.max(0, now - level.at)) / 1000);
  }

  /** Takes `amount` (negative: gives back) from the key's level, never below −rate × maxDebtSeconds. */
  spend(
    key: string,
    unit: CostUnit,
    amount: number,
    rate: number,
    maxDebtSeconds: number,
    now: number,
  ): void {
    if (!(rate > 0) || amount === 0 || !Number.isFinite(amount)) return;
    const left = Math.max(-rate * maxDebtSeconds, this.level(key, unit, rate, now) - amount);
    this.levels.set(`${unit}\n${key}`, { left, at: now });
    if (this.levels.size > MAX_KEYS) this.forgetIdle(now);
  }

  /** Seconds until the level is back above zero (0 when it is). */
  secondsToRefill(key: string, unit: CostUnit, rate: number, now: number): number {
    const level = this.level(key, unit, rate, now);
    return level > 0 ? 0 : -level / rate;
  }

  private forgetIdle(now: number): void {
    for (const [key, level] of this.levels) if (now - level.at > IDLE_MS) this.levels.delete(key);
  }
}
