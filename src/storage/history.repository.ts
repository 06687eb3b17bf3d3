import { Injectable } from '@nestjs/common';
import type { FhirVersion } from '@app/fhir';
import type { TenantContext } from '../tenancy/tenant-context';
import type { HistoryDoc } from './documents';
import { ResourceStorage } from './resource-storage';
import type { Conditions } from './tenant-scope';
import { findWithinBudget } from './page-budget';
import { HISTORY_PAGE_INDEXES } from './indexes';

/** Which versions a history page holds (https://hl7.org/fhir/R4/http.html#history). */
export interface HistoryWindow {
  /** Only versions with `lu >= since` (`_since`, and the start of `_at`). */
  since?: Date;
  /** Only versions with `lu <= until` (the end of `_at`). */
  until?: Date;
  /** Instance history: only versions from this one on (`_at`: the version current at its start). */
  fromVid?: number;
  /** Instance history: versions up to the current document's (claimed-but-unfinished ones are not served). */
  toVid?: number;
}

/** A history page: `limit` versions from `skip`, held to `maxBytes` of version JSON (page-budget.ts). */
export interface HistoryPage {
  skip: number;
  limit: number;
  maxBytes: number;
}

/**
 * The index of a type or system history page: the user's own for a user's context, the client's
 * otherwise, each holding the page's order (`lu` then `_id`, newest first: indexes.ts).
 */
function historyIndexOf(ctx: TenantContext, type: string | undefined): string {
  const user = ctx.userId !== null;
  if (type === undefined) return user ? HISTORY_PAGE_INDEXES.userSystem : HISTORY_PAGE_INDEXES.system;
  return user ? HISTORY_PAGE_INDEXES.userType : HISTORY_PAGE_INDEXES.type;
}

/**
 * Reads of the `resource_history` collection for the history interactions (docs/storage.md).
 * Type and system history are range scans on the (v, c, [u,] [t,] lu, _id) indexes declared in
 * src/storage/indexes.ts; instance history on (rk, vid). Each page names its index: where the
 * engine walks it in order the page stops after its rows (DocumentDB's planner would otherwise
 * cost a bitmap scan and a sort lower on a small range). Every query runs on `scoped(ctx)`.
 */
@Injectable()
export class HistoryRepository {
  constructor(private readonly storage: ResourceStorage) {}

  private windowFilter(window: HistoryWindow): Conditions<HistoryDoc> {
    const filter: Conditions<HistoryDoc> = {};
    if (window.since || window.until) {
      filter.lu = {
        ...(window.since ? { $gte: window.since } : {}),
        ...(window.until ? { $lte: window.until } : {}),
      };
    }
    if (window.fromVid !== undefined || window.toVid !== undefined) {
      filter.vid = {
        ...(window.fromVid !== undefined ? { $gte: window.fromVid } : {}),
        ...(window.toVid !== undefined ? { $lte: window.toVid } : {}),
      };
    }
    return filter;
  }

  /** A page of one resource's versions, newest first, and how many there are in the window. */
  async instancePage(
    ctx: TenantContext,
    key: string,
    window: HistoryWindow,
    page: HistoryPage,
  ): Promise<{ rows: HistoryDoc[]; total: number }> {
    const history = this.storage.scoped(ctx).history;
    const filter = history.where({ rk: key }, this.windowFilter(window));
    const [{ docs: rows }, total] = await Promise.all([
      findWithinBudget(ctx, history, filter, {
        ...page,
        sort: { vid: -1 },
        hint: HISTORY_PAGE_INDEXES.instance,
      }),
      history.countDocuments(filter),
    ]);
    return { rows, total };
  }

  /** The newest version of one resource written at or before `instant` (start of `_at`). */
  async versionAt(ctx: TenantContext, key: string, instant: Date): Promise<number | undefined> {
    const history = this.storage.scoped(ctx).history;
    const row = await history.findOne(history.where({ rk: key }, { lu: { $lte: instant } }), {
      sort: { vid: -1 },
      projection: { vid: 1 },
    });
    return row?.vid;
  }

  /** A page of the versions of one type (or of every type), newest first, and their number. */
  async page(
    ctx: TenantContext,
    version: FhirVersion,
    type: string | undefined,
    window: HistoryWindow,
    page: HistoryPage,
  ): Promise<{ rows: HistoryDoc[]; total: number }> {
    const history = this.storage.scoped(ctx).history;
    const filter = history.where(
      { v: version },
      { ...(type ? { t: type } : {}), ...this.windowFilter(window) },
    );
    const [{ docs: rows }, total] = await Promise.all([
      findWithinBudget(ctx, history, filter, {
        ...page,
        sort: { lu: -1, _id: -1 },
        hint: historyIndexOf(ctx, type),
      }),
      history.countDocuments(filter),
    ]);
    return { rows, total };
  }
}
