import { Injectable } from '@nestjs/common';
import { InjectConnection } from '@nestjs/mongoose';
import type { Connection, mongo } from 'mongoose';
import type { FhirVersion } from '@app/fhir';
import { TenantContext, tenantFilter } from '../../tenancy/tenant-context';
import { findWithinBudget } from './page-budget';
import { HISTORY_COLLECTION, type HistoryDoc } from './resource-documents';

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
 * Reads of the `resource_history` collection for the history interactions (docs/storage.md).
 * Type and system history are range scans on the (v, c, [u,] t, lu) indexes declared in
 * ResourceRepository; instance history on (rk, vid). The tenant filter is on every query.
 */
@Injectable()
export class HistoryRepository {
  constructor(@InjectConnection() private readonly connection: Connection) {}

  private get history(): mongo.Collection<HistoryDoc> {
    return this.connection.db!.collection<HistoryDoc>(HISTORY_COLLECTION);
  }

  private windowFilter(window: HistoryWindow): mongo.Filter<HistoryDoc> {
    const filter: mongo.Filter<HistoryDoc> = {};
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
    const filter = { rk: key, ...tenantFilter(ctx), ...this.windowFilter(window) };
    const [{ docs: rows }, total] = await Promise.all([
      findWithinBudget(this.history, filter, { ...page, sort: { vid: -1 } }),
      this.history.countDocuments(filter),
    ]);
    return { rows, total };
  }

  /** The newest version of one resource written at or before `instant` (start of `_at`). */
  async versionAt(ctx: TenantContext, key: string, instant: Date): Promise<number | undefined> {
    const row = await this.history.findOne(
      { rk: key, ...tenantFilter(ctx), lu: { $lte: instant } },
      { sort: { vid: -1 }, projection: { vid: 1 } },
    );
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
    const filter: mongo.Filter<HistoryDoc> = {
      v: version,
      ...tenantFilter(ctx),
      ...(type ? { t: type } : {}),
      ...this.windowFilter(window),
    };
    const [{ docs: rows }, total] = await Promise.all([
      findWithinBudget(this.history, filter, { ...page, sort: { lu: -1, _id: -1 } }),
      this.history.countDocuments(filter),
    ]);
    return { rows, total };
  }
}
