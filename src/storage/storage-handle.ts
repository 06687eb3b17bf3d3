import { Injectable } from '@nestjs/common';
import { historyKey, resourceKey, type FhirVersion, type ParsedSearch } from '@app/fhir';
import type { TenantContext } from '../tenancy/tenant-context';
import { historyOf, type HistoryDoc, type ResourceDoc } from './documents';
import { ResourceRepository } from './resource.repository';
import { ResourceWritesRepository } from './resource-writes.repository';
import {
  SearchExecutor,
  type SearchPageResult,
  type SearchPageSize,
  type SearchWithin,
} from './search/search-executor';
import {
  WriteProtocol,
  type BundleWrites,
  type NewResource,
  type NewResourceOutcome,
  type UpsertOptions,
  type WrittenVersion,
} from './write-protocol';

/**
 * One request's storage (docs/storage.md): built from its `TenantContext` by `StorageService.for`,
 * it holds the tenant, so nothing above it passes the context again or sees a filter, a key
 * layout or a step of the write protocol. Services ask it for FHIR things (create, update if the
 * version matches, delete, read by id or version) and get stored versions back.
 */
export class StorageHandle {
  constructor(
    readonly ctx: TenantContext,
    private readonly storage: StorageService,
  ) {}

  /** The storage key of a resource of this tenant (condition keys and id claims name it). */
  key(version: FhirVersion, type: string, id: string): string {
    return resourceKey(version, this.ctx.clientId, type, id);
  }

  // ---- reads --------------------------------------------------------------------------------

  /** The current version in the caller's scope (a delete tombstone included), or null. */
  read(version: FhirVersion, type: string, id: string): Promise<ResourceDoc | null> {
    return this.storage.reads.findCurrent(this.ctx, this.key(version, type, id));
  }

  /** The current version a key names (one a condition key holds), or null. */
  readKey(key: string): Promise<ResourceDoc | null> {
    return this.storage.reads.findCurrent(this.ctx, key);
  }

  /** The current versions of many resources by key (tombstones too); absent ones left out. */
  readMany(keys: readonly string[]): Promise<Map<string, ResourceDoc>> {
    return this.storage.reads.findManyCurrent(this.ctx, keys);
  }

  /** The current versions of these resources that are not deleted (the entries a page serves); absent ones left out. */
  readLive(version: FhirVersion, refs: readonly { type: string; id: string }[]): Promise<ResourceDoc[]> {
    return this.storage.reads.findByKeys(this.ctx, version, refs);
  }

  /** The newest `limit` current resources of one type (deleted ones left out), without a total. */
  async newestOfType(version: FhirVersion, type: string, limit: number): Promise<ResourceDoc[]> {
    const { docs } = await this.storage.reads.search(this.ctx, version, { type, limit });
    return docs.filter((doc) => !doc.del);
  }

  /**
   * Version `vid` of a resource whose current version is `current`, or null. The current version's
   * row may be missing after a crash (write protocol step 2): the current document stands in.
   */
  async readVersion(current: ResourceDoc, vid: number): Promise<HistoryDoc | null> {
    const row = await this.storage.reads.findHistoryRow(this.ctx, current._id, vid);
    return row ?? (vid === current.vid ? historyOf(current) : null);
  }

  /**
   * The rows of the given versions, in the order asked. The current version's row may be missing
   * after a crash (write protocol step 2): the current document stands in. A lost older row reads
   * as removed (`gone`).
   */
  async versionRows(current: ResourceDoc, vids: readonly number[]): Promise<HistoryDoc[]> {
    const rows = await this.storage.reads.historyRowsOf(this.ctx, current._id, vids);
    const found = new Map(rows.map((r) => [r.vid, r]));
    return vids.map((vid) => {
      const row = found.get(vid);
      if (row) return row;
      if (vid === current.vid) return historyOf(current);
      return {
        ...historyOf(current),
        _id: historyKey(current._id, vid),
        vid,
        del: false,
        json: null,
        gone: true,
      };
    });
  }

  // ---- search (search/search-executor.ts) --------------------------------------------------

  /**
   * One page of a search from `parsed.skip` (filter, chains and `_has`, index, page byte budget);
   * `count`: also count the matches (at most `limit`) when the page does not tell the total.
   */
  searchPage(
    version: FhirVersion,
    parsed: ParsedSearch,
    options: { within?: SearchWithin; page: SearchPageSize; count?: { limit?: number } },
  ): Promise<SearchPageResult> {
    return this.storage.search.searchPage(this.ctx, version, parsed, options);
  }

  /** Every match of a search counted (`_summary=count`). */
  searchCount(version: FhirVersion, parsed: ParsedSearch, within?: SearchWithin): Promise<number> {
    return this.storage.search.count(this.ctx, version, parsed, within);
  }

  /** At most `limit` current matches of a search (conditional interactions). */
  searchMatches(version: FhirVersion, parsed: ParsedSearch, limit: number): Promise<ResourceDoc[]> {
    return this.storage.search.matches(this.ctx, version, parsed, limit);
  }

  /** Whether `type/id` is a current resource in the caller's scope (its JSON is not read). */
  exists(version: FhirVersion, type: string, id: string): Promise<boolean> {
    return this.storage.search.exists(this.ctx, version, type, id);
  }

  // ---- writes (write-protocol.ts) -----------------------------------------------------------

  /** Create with a server-assigned id. */
  create(version: FhirVersion, type: string, resource: Record<string, unknown>): Promise<WrittenVersion> {
    return this.storage.protocol.createWithNewId(this.ctx, version, type, resource);
  }

  /** Create or update of a chosen id; `options.ifMatch`: only if that is the current version. */
  upsert(
    version: FhirVersion,
    type: string,
    id: string,
    resource: Record<string, unknown>,
    options?: UpsertOptions,
  ): Promise<WrittenVersion> {
    return this.storage.protocol.upsert(this.ctx, version, type, id, resource, options);
  }

  /** Creates of chosen ids in one bulk insert (bundle ingest); ids that exist come back as such. */
  createMany(
    version: FhirVersion,
    resources: readonly NewResource[],
    bundle: BundleWrites,
  ): Promise<NewResourceOutcome[]> {
    return this.storage.protocol.createMany(this.ctx, version, resources, bundle);
  }

  /** The one Provenance (or two) of a bundle's writes, after its last write. */
  recordProvenance(version: FhirVersion, bundle: BundleWrites): Promise<void> {
    return this.storage.protocol.recordProvenance(this.ctx, version, bundle);
  }

  /** A delete: a tombstone version (none when the resource is deleted already). */
  delete(
    version: FhirVersion,
    type: string,
    id: string,
  ): Promise<{ versionId: number; alreadyDeleted: boolean }> {
    return this.storage.protocol.delete(this.ctx, version, type, id);
  }

  /** A stored version rewritten in place, no new version (see `WriteProtocol.rewriteInPlace`). */
  rewriteInPlace(
    version: FhirVersion,
    key: string,
    vid: number,
    resource: Record<string, unknown>,
  ): Promise<void> {
    return this.storage.protocol.rewriteInPlace(this.ctx, version, key, vid, resource);
  }

  /**
   * Removes resources for good by key (`$everything` DELETE): current documents first, then their
   * history rows (docs/storage.md "Write protocol" 4). Returns how many current documents went.
   */
  removeForGood(keys: readonly string[]): Promise<number> {
    return this.storage.writes.removeResources(this.ctx, keys);
  }

  /** `DELETE …/_history/{vid}`: the row's version is gone; with `last`, the resource goes for good. */
  async removeVersion(row: HistoryDoc, last: boolean): Promise<void> {
    await this.storage.writes.markVersionGone(this.ctx, row);
    if (last) await this.storage.writes.removeResource(this.ctx, row.rk);
  }
}

/**
 * Builds each request's `StorageHandle` (a plain object per request: no request-scoped provider,
 * whose per-request injector would cost every route).
 */
@Injectable()
export class StorageService {
  constructor(
    readonly reads: ResourceRepository,
    readonly writes: ResourceWritesRepository,
    readonly protocol: WriteProtocol,
    readonly search: SearchExecutor,
  ) {}

  for(ctx: TenantContext): StorageHandle {
    return new StorageHandle(ctx, this);
  }
}
