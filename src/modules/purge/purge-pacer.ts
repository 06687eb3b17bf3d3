/**
 * Decides how big the next purge batch is and whether it still fits the request's time budget
 * (docs/api.md §9: at most 30 s per request, repeatable). Batches grow while they are quick and
 * shrink when slow, so a small budget still stops in time and a large one is not spent on
 * round trips. Pure: the clock is injected.
 */
export const MIN_BATCH = 20;
export const MAX_BATCH = 5000;
/** The first batch of a request: about one resource per 8 ms of budget (250 for 2 s, 3,750 for 30 s). */
const FIRST_BATCH_PER_MS = 1 / 8;
/** A batch should take about this share of the budget, so a stop wastes little of it. */
const TARGET_SHARE = 0.1;
const MAX_TARGET_MS = 1000;
/** Head-room on the last batch's duration when predicting the next one. */
const SAFETY = 1.25;

export class PurgePacer {
  private readonly startedAt: number;
  private size: number;
  /** Expected duration of the next batch, from the last one; null before the first. */
  private lastBatchMs: number | null = null;
  private readonly targetMs: number;

  constructor(
    private readonly budgetMs: number,
    private readonly now: () => number = Date.now,
  ) {
    this.startedAt = now();
    this.size = Math.min(MAX_BATCH, Math.max(MIN_BATCH, Math.round(budgetMs * FIRST_BATCH_PER_MS)));
    this.targetMs = Math.min(MAX_TARGET_MS, Math.max(1, budgetMs * TARGET_SHARE));
  }

  get batchSize(): number {
    return this.size;
  }

  elapsedMs(): number {
    return this.now() - this.startedAt;
  }

  /**
   * True when another batch is expected to finish within the budget. The first batch of a request
   * always runs: every repetition makes progress, so repeating converges.
   */
  canStartBatch(): boolean {
    if (this.lastBatchMs === null) return true;
    return this.elapsedMs() + this.lastBatchMs * SAFETY <= this.budgetMs;
  }

  /** Records a finished batch of `items` that took `ms`, and sizes the next one. */
  recordBatch(ms: number, items: number): void {
    // A short batch (the end of the data) says little about the time of a full one: it sizes the
    // next batch as if scaled up, but predicts only its own duration.
    const full = items >= this.size;
    const scaled = !full && items > 0 ? ms * (this.size / items) : ms;
    const previous = this.size;
    if (scaled < this.targetMs / 2) this.size = Math.min(MAX_BATCH, this.size * 2);
    else if (scaled > this.targetMs * 2) this.size = Math.max(MIN_BATCH, Math.floor(this.size / 2));
    this.lastBatchMs = full ? ms * (this.size / previous) : ms;
  }
}
