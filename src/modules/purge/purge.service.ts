import { Inject, Injectable, Logger } from '@nestjs/common';
import { OperationOutcome, OperationOutcomeError, resourceKey } from '@app/fhir';
import { SETTINGS } from '../../config/config.module';
import { Settings } from '../../config/settings';
import { TenantContext } from '../../tenancy/tenant-context';
import { groupBy } from './group-by';
import { SLICES, sliceRange } from './key-ranges';
import { PurgePacer } from './purge-pacer';
import {
  PurgeSubject,
  PurgeTally,
  purgeCompletedOutcome,
  purgeDryRunOutcome,
  purgeUnfinishedError,
} from './purge-outcome';
import { PurgeRequest } from './purge-request';
import { HistoryRowRef, PurgeRepository, PurgeSelection } from './purge.repository';

/**
 * Time kept back from the budget for counting what is left when the removal stops early (the
 * answer waits for it): a tenth of the budget, at most 2 s, so that a request with the default
 * 30 s budget answers within it (docs/api.md §9). The count itself may take up to 1 s even under a
 * smaller reserve (tiny test budgets); one that does not finish in time leaves `remaining` out.
 */
export function remainingCount(budgetMs: number): { reservedMs: number; timeoutMs: number } {
  const reservedMs = Math.min(2000, Math.round(budgetMs / 10));
  return { reservedMs, timeoutMs: Math.max(reservedMs, 1000) };
}

type StopReason = 'budget' | 'disconnect';

/**
 * Pacer batch size per key slice of a whole-type purge: the first batch of a 2 s request spans 3
 * of the 65 slices, a 30 s request's whole types (a slice holds about 1/16 of a type whose ids are
 * hex UUIDs).
 */
const RESOURCES_PER_SLICE = 80;

/**
 * `DELETE /{v}/purge` (docs/api.md §9). Removes the matching resources of one user in
 * batches: each batch deletes the current documents first (readers answer 404 at once), then every
 * history row of exactly the documents that went (docs/storage.md, write protocol 4), so a stop at
 * any point leaves no resource half visible. A later run also removes history rows left without
 * their current document by an interrupted removal.
 */
@Injectable()
export class PurgeService {
  private readonly logger = new Logger('Purge');

  constructor(
    private readonly repository: PurgeRepository,
    @Inject(SETTINGS) private readonly settings: Settings,
  ) {}

  async purge(ctx: TenantContext, request: PurgeRequest, signal?: AbortSignal): Promise<OperationOutcome> {
    if (ctx.userId === null) {
      // The tenant guard refuses `x-service-user-id: client` here; this keeps the rule local too.
      throw OperationOutcomeError.invalid('purge is per user: name one user (x-service-user-id)');
    }
    const subject: PurgeSubject = { version: request.version, userId: ctx.userId };
    const selection: PurgeSelection = {
      version: request.version,
      types: request.types,
      before: request.before,
    };
    const budgetMs = this.settings.purgeBudgetMs;
    if (request.mode === 'dry-run') return this.dryRun(ctx, selection, subject, budgetMs);

    const count = remainingCount(budgetMs);
    const pacer = new PurgePacer(budgetMs - count.reservedMs);
    const tally = new PurgeTally();
    const stop =
      (selection.before === null
        ? await this.removeWholeTypes(ctx, selection, pacer, tally, signal)
        : await this.removeMatching(ctx, selection, pacer, tally, signal)) ??
      (await this.removeLeftovers(ctx, selection, pacer, tally, signal));
    const summary = {
      client: ctx.clientId,
      user: ctx.userId,
      version: request.version,
      resources: tally.resources,
      versions: tally.versions,
      ms: pacer.elapsedMs(),
    };
    if (stop) {
      const remaining = await this.repository
        .countMatching(ctx, selection, count.timeoutMs)
        .catch(() => null);
      // Stopped just as the work ran out: nothing current and no leftover version is a finished
      // purge (200), not "budget ran out, 0 remain": a client must be able to tell a finished purge from one to repeat.
      const done =
        remaining === 0 && !(await this.repository.anyHistoryRow(ctx, selection).catch(() => true));
      if (!done) {
        this.logger.log({ ...summary, stopped: stop, remaining }, 'purge unfinished');
        throw purgeUnfinishedError(subject, tally, budgetMs, remaining);
      }
    }
    this.logger.log(summary, 'purge complete');
    return purgeCompletedOutcome(subject, tally);
  }

  private async dryRun(
    ctx: TenantContext,
    selection: PurgeSelection,
    subject: PurgeSubject,
    budgetMs: number,
  ): Promise<OperationOutcome> {
    const tally = new PurgeTally();
    try {
      for (const count of await this.repository.countMatchingByType(ctx, selection, budgetMs)) {
        tally.add(count.type, count.resources, count.versions);
      }
    } catch (err) {
      if ((err as { codeName?: string }).codeName === 'MaxTimeMSExpired') {
        throw new OperationOutcomeError(
          'timeout',
          `dry run could not count within the ${budgetMs} ms budget`,
          {
            status: 504,
          },
        );
      }
      throw err;
    }
    return purgeDryRunOutcome(subject, tally);
  }

  /**
   * Phase 1 without `_before`: every resource of the user in the selected types goes, so a batch is
   * a slice of a type's key space (key-ranges.ts) removed with one range delete per collection,
   * about 20× faster on DocumentDB than naming each key (measured): the current documents of the
   * slice first, then the history rows of the slice, except those of resources written into the
   * slice since (a create racing the purge keeps its history; leftovers of an interrupted removal
   * in the slice go too, counted as versions). The slices a batch spans follow the pacer.
   */
  private async removeWholeTypes(
    ctx: TenantContext,
    selection: PurgeSelection,
    pacer: PurgePacer,
    tally: PurgeTally,
    signal: AbortSignal | undefined,
  ): Promise<StopReason | undefined> {
    // A small purge fits in one batch of keys, all its types at once; a larger one goes on by slices.
    const stopFirst = this.shouldStop(pacer, signal);
    if (stopFirst) return stopFirst;
    if (!(await this.removeKeyBatch(ctx, selection, pacer, tally))) return undefined;
    const stopAfterFirst = this.shouldStop(pacer, signal);
    if (stopAfterFirst) return stopAfterFirst;
    const { version } = selection;
    for (const type of await this.repository.typesOf(ctx, selection)) {
      const prefix = resourceKey(version, ctx.clientId, type, '');
      for (let slice = 0; slice < SLICES;) {
        const stop = this.shouldStop(pacer, signal);
        if (stop) return stop;
        const startedAt = Date.now();
        const count = Math.ceil(pacer.batchSize / RESOURCES_PER_SLICE);
        const range = sliceRange(prefix, slice, count);
        // Empty slices cost a read, no delete; the type is done when nothing is left after `slice`.
        if ((await this.repository.someKeyInRange(ctx, version, type, range)) === null) {
          const rest = sliceRange(prefix, slice + count, SLICES);
          if (
            slice + count >= SLICES ||
            (await this.repository.someKeyInRange(ctx, version, type, rest)) === null
          )
            break;
          slice += count;
          continue;
        }
        const resources = await this.repository.removeCurrentInRange(ctx, version, type, range);
        const written = await this.repository.keysInRange(ctx, version, type, range);
        const versions = await this.repository.removeHistoryInRange(ctx, version, range, written);
        tally.add(type, resources, versions);
        pacer.recordBatch(Date.now() - startedAt, pacer.batchSize);
        slice += count;
      }
    }
    return undefined;
  }

  /** Phase 1 with `_before`: matching current documents and their history, batch by batch. */
  private async removeMatching(
    ctx: TenantContext,
    selection: PurgeSelection,
    pacer: PurgePacer,
    tally: PurgeTally,
    signal: AbortSignal | undefined,
  ): Promise<StopReason | undefined> {
    for (;;) {
      const stop = this.shouldStop(pacer, signal);
      if (stop) return stop;
      if (!(await this.removeKeyBatch(ctx, selection, pacer, tally))) return undefined;
    }
  }

  /**
   * One batch of matching current documents named by key, then their history. Returns false when
   * it took the last matches (a short batch: no need for one more read).
   */
  private async removeKeyBatch(
    ctx: TenantContext,
    selection: PurgeSelection,
    pacer: PurgePacer,
    tally: PurgeTally,
  ): Promise<boolean> {
    const startedAt = Date.now();
    const limit = pacer.batchSize;
    const refs = await this.repository.matchingKeys(ctx, selection, limit);
    if (refs.length === 0) return false;
    const gone = await this.repository.removeCurrent(ctx, selection, refs);
    const removed = refs.filter((ref) => gone.has(ref.key));
    // Only now, with the current documents gone, their history (rows 1..n of each: the
    // versions the documents held, which is also what the tally counts).
    if (removed.length > 0) {
      await this.repository.removeHistoryOf(ctx, selection.version, removed);
    }
    for (const ref of removed) tally.add(ref.type, 1, ref.versions);
    pacer.recordBatch(Date.now() - startedAt, refs.length);
    return refs.length >= limit;
  }

  /**
   * Phase 2: history rows of this user and selection whose current document is gone (a removal
   * interrupted between its two steps). Readers already ignore them; this makes the purge whole.
   * With `_before`, a leftover matches when its newest version is older, as its current one was.
   * The user's rows are read newest first, one type at a time when the selection names types (the
   * order of the user's history page indexes); each resource found without its current document
   * has all its rows read by key, judged and removed together.
   */
  private async removeLeftovers(
    ctx: TenantContext,
    selection: PurgeSelection,
    pacer: PurgePacer,
    tally: PurgeTally,
    signal: AbortSignal | undefined,
  ): Promise<StopReason | undefined> {
    for (const type of selection.types ?? [null]) {
      let olderThan: Date | null = null;
      for (;;) {
        const stop = this.shouldStop(pacer, signal);
        if (stop) return stop;
        const startedAt = Date.now();
        const limit = pacer.batchSize;
        const page = await this.wholeInstants(ctx, selection, type, olderThan, limit);
        if (page.rows.length === 0) break;
        olderThan = page.rows[page.rows.length - 1].lastUpdated;
        await this.removeLeftoversAmong(ctx, selection, page.rows, tally);
        pacer.recordBatch(Date.now() - startedAt, page.rows.length);
        if (!page.full) break;
      }
    }
    return undefined;
  }

  /**
   * A page of the user's rows older than `olderThan`, newest first, holding every row of each
   * instant it reaches: a full page's last instant may go on past it (a bundle's rows share one),
   * so that instant's rows are all read, and the next page starts below it.
   */
  private async wholeInstants(
    ctx: TenantContext,
    selection: PurgeSelection,
    type: string | null,
    olderThan: Date | null,
    limit: number,
  ): Promise<{ rows: HistoryRowRef[]; full: boolean }> {
    const rows = await this.repository.historyRowsOlderThan(ctx, selection.version, type, olderThan, limit);
    if (rows.length < limit) return { rows, full: false };
    const last = rows[rows.length - 1].lastUpdated;
    const before = rows.filter((row) => row.lastUpdated.getTime() !== last.getTime());
    const atLast = await this.repository.historyRowsAt(ctx, selection.version, type, last);
    return { rows: [...before, ...atLast], full: true };
  }

  /** Removes the rows of the resources among `rows` that are leftovers (see removeLeftovers). */
  private async removeLeftoversAmong(
    ctx: TenantContext,
    selection: PurgeSelection,
    rows: HistoryRowRef[],
    tally: PurgeTally,
  ): Promise<void> {
    const keys = [...new Set(rows.map((row) => row.resourceKey))];
    const existing = await this.repository.existingKeys(ctx, selection.version, keys);
    const gone = keys.filter((key) => !existing.has(key));
    if (gone.length === 0) return;
    const groups = groupBy(
      await this.repository.historyRowsOf(ctx, selection.version, gone),
      (row) => row.resourceKey,
    );
    const leftoverRows = [...groups.values()]
      .filter(
        (group) => selection.before === null || group.every((row) => row.lastUpdated < selection.before!),
      )
      .flat();
    for (const [type, typeRows] of groupBy(leftoverRows, (row) => row.type)) {
      const removed = await this.repository.removeHistoryRows(
        ctx,
        selection.version,
        typeRows.map((row) => row.id),
      );
      tally.add(type, 0, removed);
    }
  }

  private shouldStop(pacer: PurgePacer, signal: AbortSignal | undefined): StopReason | undefined {
    if (signal?.aborted) return 'disconnect';
    return pacer.canStartBatch() ? undefined : 'budget';
  }
}
