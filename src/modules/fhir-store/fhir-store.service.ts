import { Inject, Injectable } from '@nestjs/common';
import {
  issue,
  OperationOutcomeError,
  parseVersionEtag,
  validateResource,
  type FhirVersion,
} from '@app/fhir';
import { pagingParameter } from '../../common/paging-parameter';
import { timedOnLoop } from '../../admission/event-loop-time';
import { SETTINGS } from '../../config/config.module';
import type { Settings } from '../../config/settings';
import type { TenantContext } from '../../tenancy/tenant-context';
import { versionHeaders } from '../../fhir-http/reply-presenter';
import { found, written, type Found, type Removed, type Written } from '../../fhir-http/results';
import type { ResourceDoc } from '../../storage/documents';
import { StorageService, type StorageHandle } from '../../storage/storage-handle';
import { DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE } from './page-size';

export type QueryParams = Record<string, string | string[] | undefined>;

/**
 * Throws the validation issues of a resource as one OperationOutcome, all issues at once: 400 for
 * a posted resource, 422 for the result of a patch (https://hl7.org/fhir/R4/http.html#patch).
 * The walk's event-loop time is charged to `caller` (admission's timedOnLoop).
 */
export function assertValid(
  version: FhirVersion,
  resource: unknown,
  expectedType: string,
  status = 400,
  caller?: Pick<TenantContext, 'chargeLoopMs'>,
): void {
  const issues = timedOnLoop(caller, () => validateResource(version, resource, expectedType));
  const errors = issues.filter((i) => i.severity === 'error');
  if (errors.length === 0) return;
  throw new OperationOutcomeError(
    status === 422 ? 'processing' : 'invalid',
    `${errors.length} validation error(s)`,
    {
      status,
      issues: issues.map((i) =>
        issue(i.code, i.message, { severity: i.severity, path: i.path, rule: i.rule }),
      ),
    },
  );
}

/** `If-Match: W/"n"` → n; anything but a version ETag → 412 (https://hl7.org/fhir/R4/http.html#concurrency). */
export function ifMatchVersion(header: string | undefined): number | undefined {
  if (header === undefined) return undefined;
  const vid = parseVersionEtag(header);
  if (vid === undefined) {
    throw new OperationOutcomeError('conflict', `If-Match "${header}" is not a version ETag such as W/"1"`, {
      status: 412,
    });
  }
  return vid;
}

function single(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[value.length - 1] : value;
}

/** The versions' behaviour: create, read, versioned read, history, update, deletes. */
@Injectable()
export class FhirStoreService {
  constructor(
    private readonly storage: StorageService,
    @Inject(SETTINGS) private readonly settings: Settings,
  ) {}

  /** `POST /{v}/{type}`: a client-supplied id adds a version to the caller's own resource (docs/api.md §5). */
  async create(
    ctx: TenantContext,
    version: FhirVersion,
    type: string,
    resource: Record<string, unknown>,
  ): Promise<Written> {
    assertValid(version, resource, type, 400, ctx);
    const store = this.storage.for(ctx);
    const stored =
      typeof resource.id === 'string'
        ? await store.upsert(version, type, resource.id, resource)
        : await store.create(version, type, resource);
    return written(stored.doc, stored.created);
  }

  /** `PUT /{v}/{type}/{id}`: update or create-on-update; `If-Match` must name the current version. */
  async update(
    ctx: TenantContext,
    version: FhirVersion,
    type: string,
    id: string,
    resource: Record<string, unknown>,
    ifMatchHeader?: string,
    options: { createOnly?: boolean } = {},
  ): Promise<Written> {
    if (resource.id === undefined) {
      throw OperationOutcomeError.invalid(
        'the resource must carry its id on update (https://hl7.org/fhir/R4/http.html#update)',
        'id',
      );
    }
    if (resource.id !== id) {
      throw OperationOutcomeError.invalid(
        `the id in the body (${JSON.stringify(resource.id)}) differs from the id in the URL (${id})`,
        'id',
      );
    }
    assertValid(version, resource, type, 400, ctx);
    const ifMatch = ifMatchVersion(ifMatchHeader);
    const stored = await this.storage.for(ctx).upsert(version, type, id, resource, { ifMatch, ...options });
    return written(stored.doc, stored.created);
  }

  async read(ctx: TenantContext, version: FhirVersion, type: string, id: string): Promise<Found> {
    const doc = await this.storage.for(ctx).read(version, type, id);
    if (!doc) throw OperationOutcomeError.notFound(`${type}/${id} is not known`);
    if (doc.del || doc.json === null) {
      // docs/api.md §7: 410 with an OperationOutcome; earlier versions stay readable by versioned read.
      throw new OperationOutcomeError('deleted', `${type}/${id} was deleted (version ${doc.vid})`, {
        status: 410,
        headers: versionHeaders(doc),
      });
    }
    return found(doc);
  }

  async vread(
    ctx: TenantContext,
    version: FhirVersion,
    type: string,
    id: string,
    vidParam: string,
  ): Promise<Found> {
    const store = this.storage.for(ctx);
    const { current, vid } = await this.versionOf(store, version, type, id, vidParam);
    const row = await store.readVersion(current, vid);
    if (!row || row.gone)
      throw OperationOutcomeError.notFound(`version ${vid} of ${type}/${id} has been deleted`);
    if (row.del || row.json === null) {
      throw new OperationOutcomeError('deleted', `${type}/${id} was deleted in version ${vid}`, {
        status: 410,
        headers: versionHeaders(row),
      });
    }
    return found(row);
  }

  /** The current document and a version number of it that exists (1 … current), else 404. */
  private async versionOf(
    store: StorageHandle,
    version: FhirVersion,
    type: string,
    id: string,
    vidParam: string,
  ): Promise<{ current: ResourceDoc; vid: number }> {
    const current = await store.read(version, type, id);
    const vid = /^\d{1,15}$/.test(vidParam) ? Number(vidParam) : NaN;
    if (!current || !(vid >= 1 && vid <= current.vid)) {
      throw OperationOutcomeError.notFound(`${type}/${id}/_history/${vidParam} is not known`);
    }
    return { current, vid };
  }

  /** `DELETE /{v}/{type}/{id}`: 200 with the OperationOutcome of docs/api.md §7. */
  async delete(ctx: TenantContext, version: FhirVersion, type: string, id: string): Promise<Removed> {
    const { versionId } = await this.storage.for(ctx).delete(version, type, id);
    return { kind: 'removed', type, id, vid: versionId, of: 'resource' };
  }

  /**
   * `DELETE /{v}/{type}/{id}/_history/{vid}` (docs/api.md §7): the version is removed and history shows it
   * as an OperationOutcome; once no version is left the resource is removed and reads 404 for good.
   * The current version of a live resource cannot be removed this way: delete the resource first.
   */
  async deleteVersion(
    ctx: TenantContext,
    version: FhirVersion,
    type: string,
    id: string,
    vidParam: string,
  ): Promise<Removed> {
    const store = this.storage.for(ctx);
    const { current, vid } = await this.versionOf(store, version, type, id, vidParam);
    if (vid === current.vid && !current.del) {
      throw new OperationOutcomeError(
        'conflict',
        `version ${vid} is the current version of ${type}/${id}: delete the resource first (DELETE ${type}/${id})`,
        { status: 409 },
      );
    }
    const all = Array.from({ length: current.vid }, (_, i) => current.vid - i);
    const rows = await store.versionRows(current, all);
    const row = rows.find((r) => r.vid === vid);
    if (!row || row.gone)
      throw OperationOutcomeError.notFound(`version ${vid} of ${type}/${id} has already been deleted`);
    const left = rows.filter((r) => r.vid !== vid && !r.gone);
    await store.removeVersion(row, left.length === 0);
    return { kind: 'removed', type, id, vid, of: 'version' };
  }

  /** `_count` (default 10, at most 100) and `_skip` (at most SEARCH_MAX_SKIP); bad values → 400. */
  paging(query: QueryParams): { count: number; skip: number } {
    // a larger page than served is a hint, not an error; a deeper position is refused
    const count = pagingParameter('_count', single(query._count), {
      fallback: DEFAULT_PAGE_SIZE,
      max: MAX_PAGE_SIZE,
      overMax: 'clamp',
    });
    const skip = pagingParameter('_skip', single(query._skip), {
      fallback: 0,
      max: this.settings.searchMaxSkip,
      overMax: 'refuse',
    });
    return { count, skip };
  }
}
