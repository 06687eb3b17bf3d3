import { Inject, Injectable } from '@nestjs/common';
import {
  deletedOutcome,
  issue,
  OperationOutcomeError,
  parseVersionEtag,
  validateResource,
  versionEtag,
  type FhirVersion,
} from '@app/fhir';
import { pagingParameter } from '../../common/paging-parameter';
import { SETTINGS } from '../../config/config.module';
import type { Settings } from '../../config/settings';
import type { TenantContext } from '../../tenancy/tenant-context';
import type { FhirReply } from '../../fhir-http/fhir-reply';
import { applyReturnPreference } from './prefer';
import { historyOf, type HistoryDoc, type ResourceDoc } from '../../storage/documents';
import { ResourceRepository } from '../../storage/resource.repository';
import { ResourceWriter, type WrittenVersion } from './resource-writer';

export type QueryParams = Record<string, string | string[] | undefined>;

/** Default and largest page size of searches and history (docs/api.md §13: 10 per bundle by default). */
export const DEFAULT_PAGE_SIZE = 10;
export const MAX_PAGE_SIZE = 100;

/**
 * Throws the validation issues of a resource as one OperationOutcome, all issues at once: 400 for
 * a posted resource, 422 for the result of a patch (https://hl7.org/fhir/R4/http.html#patch).
 */
export function assertValid(
  version: FhirVersion,
  resource: unknown,
  expectedType: string,
  status = 400,
): void {
  const issues = validateResource(version, resource, expectedType);
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
    private readonly repository: ResourceRepository,
    private readonly writer: ResourceWriter,
    @Inject(SETTINGS) private readonly settings: Settings,
  ) {}

  private resourceUrl(version: FhirVersion, type: string, id: string): string {
    return `${this.settings.urls.base}/${version}/${type}/${id}`;
  }

  /** 201/200 with the stored resource, Location and ETag (docs/api.md §5), shaped by `Prefer: return=`. */
  writeReply(version: FhirVersion, written: WrittenVersion, prefer?: string): FhirReply {
    const { doc } = written;
    const reply = {
      status: written.created ? 201 : 200,
      body: doc.json ?? '{}',
      headers: {
        Location: `${this.resourceUrl(version, doc.t, doc.id)}/_history/${doc.vid}`,
        ETag: versionEtag(doc.vid),
        'Last-Modified': doc.lu.toUTCString(),
      },
    };
    const done = written.created ? 'created' : 'updated';
    return applyReturnPreference(reply, prefer, `${doc.t}/${doc.id} ${done}: version ${doc.vid}`);
  }

  /** 200 with a resource that was found, not written (conditional create with a match). */
  existingReply(version: FhirVersion, doc: ResourceDoc, note: string, prefer?: string): FhirReply {
    const reply = this.writeReply(version, { doc, created: false });
    const text = `${doc.t}/${doc.id} (version ${doc.vid}) ${note}`;
    return applyReturnPreference({ ...reply, body: doc.json ?? '{}' }, prefer, text);
  }

  /** `POST /{v}/{type}`: a client-supplied id adds a version to the caller's own resource (docs/api.md §5). */
  async create(
    ctx: TenantContext,
    version: FhirVersion,
    type: string,
    resource: Record<string, unknown>,
    prefer?: string,
  ): Promise<FhirReply> {
    assertValid(version, resource, type);
    const written =
      typeof resource.id === 'string'
        ? await this.writer.upsert(ctx, version, type, resource.id, resource)
        : await this.writer.createWithNewId(ctx, version, type, resource);
    return this.writeReply(version, written, prefer);
  }

  /** `PUT /{v}/{type}/{id}`: update or create-on-update; `If-Match` must name the current version. */
  async update(
    ctx: TenantContext,
    version: FhirVersion,
    type: string,
    id: string,
    resource: Record<string, unknown>,
    ifMatchHeader?: string,
    prefer?: string,
    options: { createOnly?: boolean } = {},
  ): Promise<FhirReply> {
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
    assertValid(version, resource, type);
    const ifMatch = ifMatchVersion(ifMatchHeader);
    const written = await this.writer.upsert(ctx, version, type, id, resource, { ifMatch, ...options });
    return this.writeReply(version, written, prefer);
  }

  async read(ctx: TenantContext, version: FhirVersion, type: string, id: string): Promise<FhirReply> {
    const doc = await this.repository.findCurrent(ctx, this.repository.key(ctx, version, type, id));
    if (!doc) throw OperationOutcomeError.notFound(`${type}/${id} is not known`);
    const headers = { ETag: versionEtag(doc.vid), 'Last-Modified': doc.lu.toUTCString() };
    if (doc.del || doc.json === null) {
      // docs/api.md §7: 410 with an OperationOutcome; earlier versions stay readable by versioned read.
      throw new OperationOutcomeError('deleted', `${type}/${id} was deleted (version ${doc.vid})`, {
        status: 410,
        headers,
      });
    }
    return { status: 200, body: doc.json, headers };
  }

  async vread(
    ctx: TenantContext,
    version: FhirVersion,
    type: string,
    id: string,
    vidParam: string,
  ): Promise<FhirReply> {
    const { key, current, vid } = await this.versionOf(ctx, version, type, id, vidParam);
    // The current version's row may be missing after a crash (write protocol step 3): use the current doc.
    const row =
      (await this.repository.findHistoryRow(ctx, key, vid)) ??
      (vid === current.vid ? historyOf(current) : null);
    if (!row || row.gone)
      throw OperationOutcomeError.notFound(`version ${vid} of ${type}/${id} has been deleted`);
    const headers = { ETag: versionEtag(row.vid), 'Last-Modified': row.lu.toUTCString() };
    if (row.del || row.json === null) {
      throw new OperationOutcomeError('deleted', `${type}/${id} was deleted in version ${vid}`, {
        status: 410,
        headers,
      });
    }
    return { status: 200, body: row.json, headers };
  }

  /**
   * The rows of the given versions, newest first. The current version's row may be missing after a
   * crash (write protocol): the current document stands in. A lost older row reads as removed.
   */
  private async versionRows(
    ctx: TenantContext,
    current: ResourceDoc,
    vids: readonly number[],
  ): Promise<HistoryDoc[]> {
    const found = new Map(
      (await this.repository.historyRowsOf(ctx, current._id, vids)).map((r) => [r.vid, r]),
    );
    return vids.map((vid) => {
      const row = found.get(vid);
      if (row) return row;
      if (vid === current.vid) return historyOf(current);
      return { ...historyOf(current), _id: `${current._id}|${vid}`, vid, del: false, json: null, gone: true };
    });
  }

  /** The current document and a version number of it that exists (1 … current), else 404. */
  private async versionOf(
    ctx: TenantContext,
    version: FhirVersion,
    type: string,
    id: string,
    vidParam: string,
  ): Promise<{ key: string; current: ResourceDoc; vid: number }> {
    const key = this.repository.key(ctx, version, type, id);
    const current = await this.repository.findCurrent(ctx, key);
    const vid = /^\d{1,15}$/.test(vidParam) ? Number(vidParam) : NaN;
    if (!current || !(vid >= 1 && vid <= current.vid)) {
      throw OperationOutcomeError.notFound(`${type}/${id}/_history/${vidParam} is not known`);
    }
    return { key, current, vid };
  }

  /** `DELETE /{v}/{type}/{id}`: 200 with the OperationOutcome of docs/api.md §7. */
  async delete(ctx: TenantContext, version: FhirVersion, type: string, id: string): Promise<FhirReply> {
    const { versionId } = await this.writer.delete(ctx, version, type, id);
    return {
      status: 200,
      body: deletedOutcome(type, id, versionId),
      headers: { ETag: versionEtag(versionId) },
    };
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
  ): Promise<FhirReply> {
    const { key, current, vid } = await this.versionOf(ctx, version, type, id, vidParam);
    if (vid === current.vid && !current.del) {
      throw new OperationOutcomeError(
        'conflict',
        `version ${vid} is the current version of ${type}/${id}: delete the resource first (DELETE ${type}/${id})`,
        { status: 409 },
      );
    }
    const all = Array.from({ length: current.vid }, (_, i) => current.vid - i);
    const rows = await this.versionRows(ctx, current, all);
    const row = rows.find((r) => r.vid === vid);
    if (!row || row.gone)
      throw OperationOutcomeError.notFound(`version ${vid} of ${type}/${id} has already been deleted`);
    await this.repository.markVersionGone(ctx, row);
    const left = rows.filter((r) => r.vid !== vid && !r.gone);
    if (left.length === 0) await this.repository.removeResource(ctx, key);
    return { status: 200, body: deletedOutcome(type, id, vid) };
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
