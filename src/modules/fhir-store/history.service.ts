import { Inject, Injectable } from '@nestjs/common';
import {
  deletedVersionOutcome,
  historyBundleJson,
  OperationOutcomeError,
  pagingLinks,
  parseFhirDateRange,
  versionEtag,
  type FhirVersion,
  type HistoryEntry,
} from '@app/fhir';
import { SETTINGS } from '../../config/config.module';
import type { Settings } from '../../config/settings';
import type { TenantContext } from '../../tenancy/tenant-context';
import type { Page } from '../../fhir-http/results';
import { FhirStoreService, type QueryParams } from './fhir-store.service';
import { HistoryRepository, type HistoryPage, type HistoryWindow } from '../../storage/history.repository';
import { historyOf, type HistoryDoc } from '../../storage/documents';
import { StorageService } from '../../storage/storage-handle';

/** Parameters of the history interactions (https://hl7.org/fhir/R4/http.html#history). */
const HISTORY_PARAMS = new Set(['_since', '_at', '_count', '_skip', '_format', '_pretty']);

function single(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[value.length - 1] : value;
}

/** `_since` (an instant) and `_at` (a date/dateTime period) → the window of versions to serve. */
export function historyWindow(query: QueryParams): { since?: Date; at?: { lo: Date; hi: Date } } {
  for (const name of Object.keys(query)) {
    if (!HISTORY_PARAMS.has(name)) {
      throw OperationOutcomeError.invalid(
        `"${name}" is not a parameter of history: use _since, _at, _count (https://hl7.org/fhir/R4/http.html#history)`,
      );
    }
  }
  const out: { since?: Date; at?: { lo: Date; hi: Date } } = {};
  const since = single(query._since);
  if (since !== undefined) {
    const range = parseFhirDateRange(since);
    if (!range) throw OperationOutcomeError.invalid(`_since "${since}" is not a FHIR instant`, '_since');
    out.since = range.lo;
  }
  const at = single(query._at);
  if (at !== undefined) {
    const range = parseFhirDateRange(at);
    if (!range) throw OperationOutcomeError.invalid(`_at "${at}" is not a FHIR date or dateTime`, '_at');
    out.at = range;
  }
  return out;
}

/**
 * History at instance, type and system level as a `history` Bundle: the newest version first,
 * each entry with the resource's fullUrl, the request that made the version and its response.
 * A deleted version (and one removed with `DELETE …/_history/{vid}`) has no resource but a
 * `response.outcome` saying which id and version.
 */
@Injectable()
export class HistoryService {
  constructor(
    private readonly storage: StorageService,
    private readonly history: HistoryRepository,
    private readonly store: FhirStoreService,
    @Inject(SETTINGS) private readonly settings: Settings,
  ) {}

  /** `GET /{v}/{type}/{id}/_history`: `_at` serves every version current at some time in the period. */
  async instance(
    ctx: TenantContext,
    version: FhirVersion,
    type: string,
    id: string,
    query: QueryParams,
  ): Promise<Page> {
    const { since, at } = historyWindow(query);
    const { count, skip } = this.store.paging(query);
    const store = this.storage.for(ctx);
    const key = store.key(version, type, id);
    const current = await store.read(version, type, id);
    if (!current) throw OperationOutcomeError.notFound(`${type}/${id} is not known`);
    const window: HistoryWindow = { since, toVid: current.vid };
    if (at) {
      window.until = at.hi;
      window.fromVid = (await this.history.versionAt(ctx, key, at.lo)) ?? 1;
    }
    const page = await this.history.instancePage(ctx, key, window, this.pageOf(skip, count));
    const { rows } = page;
    const served = rows.length;
    let total = page.total;
    // The current version's row may be missing after a crash (write protocol step 3): it stands in.
    if (skip === 0 && rows[0]?.vid !== current.vid && inWindow(current.lu, window)) {
      rows.unshift(historyOf(current));
      total += 1;
      if (rows.length > count) rows.pop();
    }
    const url = `${this.baseUrl(version)}/${type}/${id}/_history`;
    return this.bundle(version, rows, url, query, { skip, count, total, served });
  }

  /** `GET /{v}/{type}/_history` and `GET /{v}/_history` (`type` undefined). */
  async list(
    ctx: TenantContext,
    version: FhirVersion,
    type: string | undefined,
    query: QueryParams,
  ): Promise<Page> {
    const { since, at } = historyWindow(query);
    const { count, skip } = this.store.paging(query);
    // `_at` over many resources: the versions written during the period.
    const window: HistoryWindow = { since, until: at?.hi };
    if (at && (!since || at.lo > since)) window.since = at.lo;
    const { rows, total } = await this.history.page(ctx, version, type, window, this.pageOf(skip, count));
    const visible = await this.visibleRows(ctx, rows);
    const url = `${this.baseUrl(version)}${type ? `/${type}` : ''}/_history`;
    return this.bundle(version, visible, url, query, { skip, count, total, served: rows.length });
  }

  /**
   * Leaves out rows no reader may see (docs/storage.md, write protocol 3–4): a version claimed but
   * not yet current, and rows of a resource being removed (its current document is gone).
   */
  private async visibleRows(ctx: TenantContext, rows: HistoryDoc[]): Promise<HistoryDoc[]> {
    const keys = [...new Set(rows.map((r) => r.rk))];
    // In the context's own scope: a row is visible only under its owner's current document anyway.
    const current = await this.storage.for(ctx).readMany(keys);
    return rows.filter((row) => {
      const doc = current.get(row.rk);
      return doc !== undefined && doc.u === row.u && row.vid <= doc.vid;
    });
  }

  /** `count` versions from `skip`, as many as fit SEARCH_PAGE_MAX_BYTES (at least one). */
  private pageOf(skip: number, count: number): HistoryPage {
    return { skip, limit: count, maxBytes: this.settings.searchPageMaxBytes };
  }

  private baseUrl(version: FhirVersion): string {
    return `${this.settings.urls.base}/${version}`;
  }

  private bundle(
    version: FhirVersion,
    rows: readonly HistoryDoc[],
    url: string,
    query: QueryParams,
    page: { skip: number; count: number; total: number; served: number },
  ): Page {
    const kept: Array<[string, string]> = [];
    for (const name of ['_since', '_at']) {
      const value = single(query[name]);
      if (value !== undefined) kept.push([name, value]);
    }
    const entries = rows.map((row) => this.entry(version, row));
    // STU3/DSTU2 bdl-4: entry.response only in batch/transaction responses (R4 adds history)
    if (version !== 'r4') for (const entry of entries) delete (entry as Partial<HistoryEntry>).response;
    const links = pagingLinks(url, kept, page);
    return { kind: 'page', json: historyBundleJson(version, { total: page.total, links, entries }) };
  }

  private entry(version: FhirVersion, row: HistoryDoc): HistoryEntry {
    const method = row.del ? 'DELETE' : row.vid === 1 ? 'POST' : 'PUT';
    const response = {
      status: row.del ? '200 OK' : row.vid === 1 ? '201 Created' : '200 OK',
      etag: versionEtag(row.vid),
      lastModified: row.lu.toISOString(),
    };
    const entry: HistoryEntry = {
      fullUrl: `${this.baseUrl(version)}/${row.t}/${row.id}`,
      request: { method, url: method === 'POST' ? row.t : `${row.t}/${row.id}` },
      response,
    };
    if (row.gone || row.del || row.json === null) {
      entry.response = {
        ...response,
        outcome: deletedVersionOutcome(row.t, row.id, row.vid, row.gone ? 'removed' : 'deleted'),
      };
    } else {
      entry.resourceJson = row.json;
    }
    return entry;
  }
}

function inWindow(lu: Date, window: HistoryWindow): boolean {
  return (!window.since || lu >= window.since) && (!window.until || lu <= window.until);
}
