import { Inject, Injectable } from '@nestjs/common';
import {
  issue,
  operationOutcome,
  OperationOutcomeError,
  searchsetBundleJson,
  type FhirVersion,
} from '@app/fhir';
import { SETTINGS } from '../../../config/config.module';
import type { Settings } from '../../../config/settings';
import type { TenantContext } from '../../../tenancy/tenant-context';
import type { OperationOutput, Page } from '../../../fhir-http/results';
import type { SizedRef } from '../../../storage/resource.repository';
import {
  EverythingReader,
  type EverythingScope,
  type WindowRow,
} from '../../../storage/search/everything-reader';
import type { ResourceDoc } from '../../../storage/documents';
import { StorageService } from '../../../storage/storage-handle';
import { servedWithinBudget } from '../../../storage/page-budget';
import {
  compareKeys,
  compartmentBefore,
  everythingPageLayout,
  type EverythingPageLayout,
} from './everything-page';
import { parseEverythingParams } from './patient-compartment';
import { resourceEntry, searchLinks, unknownParamsEntry } from './searchset-bundle';
import type { SearchPairs } from '../../../fhir-http/search-pairs';
import { DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE } from '../page-size';

/** Compartment resources removed per round. */
const BATCH = 1000;

/**
 * How far before a page the compartment's resources are read with the counts: a page after the
 * first has its compartment part moved back by the singles placed before it (the Patient and the
 * resources referenced outside the compartment, a few dozen for a Synthea patient).
 */
const SINGLES_AHEAD = 200;

/**
 * The JSON a window brought inline for resources the page does not serve (singles took their
 * slots, or the byte budget ended the page before them) was read for this request all the same:
 * charged to the client's share as page-budget.ts charges what a page looked at and did not serve.
 */
function chargeInlineUnserved(
  ctx: TenantContext,
  window: readonly WindowRow[] | undefined,
  served: ReadonlyArray<WindowRow | undefined>,
): void {
  const servedKeys = new Set(served.map((ref) => ref?._id));
  let bytes = 0;
  for (const row of window ?? [])
    if (typeof row.json === 'string' && !servedKeys.has(row._id)) bytes += row.size;
  if (bytes > 0) ctx.chargeUnservedReads?.(bytes);
}

/**
 * `GET|POST /{v}/Patient/{id}/$everything` and `/{v}/Patient/$everything` (https://hl7.org/fhir/R4/patient-operation-everything.html)
 * and `DELETE /{v}/Patient/{id}/$everything` (docs/api.md §7), in the caller's tenant scope.
 */
@Injectable()
export class EverythingService {
  constructor(
    private readonly reader: EverythingReader,
    private readonly storage: StorageService,
    @Inject(SETTINGS) private readonly settings: Settings,
  ) {}

  /**
   * The Patient, its compartment, and the resources they reference outside it (Practitioner,
   * Organization, Location, Medication …), ordered by resource type then id, paged. Per page: one
   * pass over the compartment in the database for per-type counts, outside references and the
   * keys of the compartment's part of the page, then the few outside resources and the page's
   * compartment resources by key (everything-page.ts says why not one query over the whole set).
   */
  async everything(
    ctx: TenantContext,
    version: FhirVersion,
    patientId: string | undefined,
    pairs: SearchPairs,
  ): Promise<Page> {
    const base = this.settings.urls.base;
    const window = parseEverythingParams(version, pairs, {
      defaultCount: DEFAULT_PAGE_SIZE,
      maxCount: MAX_PAGE_SIZE,
      maxSkip: this.settings.searchMaxSkip,
    });
    const scope = this.reader.scope(ctx, version, patientId, window);
    const kept = (doc: SizedRef) =>
      (!window.types || window.types.includes(doc.t)) && (!window.since || doc.lu >= window.since);
    // The compartment's part of the page is read in the same pass as the counts, before the
    // singles are known: from up to SINGLES_AHEAD positions before the page (singles placed
    // before it move the compartment's part back), by type and id; a window that starts at the
    // page (the first page) brings the JSON of its small resources too.
    const windowStart = Math.max(0, window.skip - SINGLES_AHEAD);
    const maxBytes = this.settings.searchPageMaxBytes;
    const counted = await this.reader.counts(
      ctx,
      version,
      scope,
      patientId === undefined
        ? undefined
        : {
            skip: windowStart,
            limit: window.skip - windowStart + window.count,
            jsonUpTo: windowStart === window.skip ? maxBytes : undefined,
          },
    );
    const servedTypes = counted.types;
    const singles = [...counted.patients, ...counted.outside].filter(kept).sort(compareKeys);
    const counts = new Map(servedTypes.map((row) => [row.type, row.count]));
    const placed = await Promise.all(
      singles.map(async (single) => ({
        before: compartmentBefore(
          single,
          counts,
          counts.has(single.t) ? await this.reader.countBefore(ctx, version, scope, single) : 0,
        ),
      })),
    );
    const compartmentTotal = servedTypes.reduce((sum, row) => sum + row.count, 0);
    const layout = everythingPageLayout(placed, compartmentTotal, window.skip, window.count);
    const part = await this.compartmentPart(ctx, version, layout, counted.window, windowStart, scope);
    let taken = 0;
    const page = layout.slots.map((slot) => (slot === 'compartment' ? part[taken++] : singles[slot]));
    // The page byte budget on the sizes: the slots in order while their JSON fits (at least one);
    // next follows them. Only the JSON of those is read.
    const sizes = page.map((ref) => ref?.size ?? 0);
    const fitting = servedWithinBudget(ctx, sizes, maxBytes);
    const inBudget = page.slice(0, fitting);
    chargeInlineUnserved(ctx, counted.window, inBudget);
    // A resource removed between the count and the page query leaves its slot empty.
    const docs = await this.withJson(
      ctx,
      version,
      inBudget.filter((ref) => ref !== undefined),
    );
    const entries = docs.map((doc) => resourceEntry(base, doc, 'match'));
    const warnings = unknownParamsEntry(window.unknown);
    if (warnings) entries.push(warnings);
    const total = layout.total;
    const links = searchLinks(
      patientId === undefined
        ? `${base}/${version}/Patient/$everything`
        : `${base}/${version}/Patient/${patientId}/$everything`,
      pairs.filter(([name]) => name !== '_count' && name !== '_skip'),
      {
        skip: window.skip,
        count: window.count,
        total,
        hasNext: window.skip + Math.min(window.count, inBudget.length || window.count) < total,
        served: inBudget.length < window.count ? inBudget.length : undefined,
      },
    );
    return { kind: 'page', json: searchsetBundleJson({ total, links, entries }) };
  }

  /**
   * The page's resources with their JSON, in page order: those of the window that brought it
   * inline as they are, the others read by key (one removed since is left out).
   */
  private async withJson(
    ctx: TenantContext,
    version: FhirVersion,
    refs: ReadonlyArray<WindowRow>,
  ): Promise<Array<Pick<ResourceDoc, 'v' | 't' | 'id' | 'json'>>> {
    const missing = refs.filter((ref) => typeof ref.json !== 'string');
    const read =
      missing.length === 0
        ? []
        : await this.storage.for(ctx).readLive(
            version,
            missing.map((ref) => ({ type: ref.t, id: ref.id })),
          );
    const byKey = new Map(read.map((doc) => [doc._id, doc]));
    return refs.flatMap((ref): Array<Pick<ResourceDoc, 'v' | 't' | 'id' | 'json'>> => {
      if (typeof ref.json === 'string') return [{ v: version, t: ref.t, id: ref.id, json: ref.json }];
      const doc = byKey.get(ref._id);
      return doc ? [doc] : [];
    });
  }

  /**
   * The compartment resources of the page, in page order, by key and size: from the window read
   * with the counts, or by a sorted query of their own (no window, or more singles come before the
   * page than the window reached back).
   */
  private async compartmentPart(
    ctx: TenantContext,
    version: FhirVersion,
    layout: EverythingPageLayout,
    window: readonly WindowRow[] | undefined,
    windowStart: number,
    scope: EverythingScope,
  ): Promise<WindowRow[]> {
    if (layout.compartmentLimit === 0) return [];
    if (window && layout.compartmentSkip >= windowStart) {
      const from = layout.compartmentSkip - windowStart;
      return window.slice(from, from + layout.compartmentLimit);
    }
    return this.reader.compartmentPage(ctx, version, scope, layout.compartmentSkip, layout.compartmentLimit);
  }

  /**
   * Removes the Patient and every resource of its compartment for this tenant, with the
   * Provenances the store wrote for them, following the removal protocol (docs/storage.md:
   * current documents first, then history) batch by batch; the Patient goes last so that an
   * interrupted removal can be run again. 200 with counts per type.
   */
  async removeEverything(
    ctx: TenantContext,
    version: FhirVersion,
    patientId: string,
  ): Promise<OperationOutput> {
    const patient = await this.storage.for(ctx).read(version, 'Patient', patientId);
    if (!patient) throw OperationOutcomeError.notFound(`Patient/${patientId} is not known`);
    const counts = new Map<string, number>();
    const count = (type: string, removed: number) => counts.set(type, (counts.get(type) ?? 0) + removed);
    for (;;) {
      const batch = await this.reader.compartmentBatch(ctx, version, patientId, BATCH);
      if (batch.length === 0) break;
      await this.removeWithProvenances(ctx, version, batch, patient, count);
    }
    await this.removeWithProvenances(ctx, version, [patient], patient, count);
    const removed = [...counts.entries()].sort(([a], [b]) => a.localeCompare(b));
    const totalRemoved = removed.reduce((sum, [, n]) => sum + n, 0);
    const outcome = operationOutcome([
      issue(
        'informational',
        `Patient/${patientId} and its compartment were removed: ${totalRemoved} resources`,
        {
          severity: 'information',
        },
      ),
      ...removed.map(([type, n]) => issue('informational', `${type}: ${n}`, { severity: 'information' })),
    ]);
    return { kind: 'output', body: outcome };
  }

  /**
   * Removes `docs` (compartment resources of `patient`, which goes last) with the store's
   * Provenances of them. A bundle's Provenance may also list resources that stay (shared
   * Practitioners, Organizations): it keeps those targets, rewritten in place so that nothing names
   * what was removed, and goes only when no target is left. The patient counts as removed from the
   * start, so a Provenance in its compartment (it targets the patient) leaves the compartment then.
   */
  private async removeWithProvenances(
    ctx: TenantContext,
    version: FhirVersion,
    docs: ReadonlyArray<{ _id: string; t: string; id: string }>,
    patient: { t: string; id: string },
    count: (type: string, removed: number) => void,
  ): Promise<void> {
    const store = this.storage.for(ctx);
    const removedRef = new Set([patient, ...docs].map((doc) => `${doc.t}/${doc.id}`));
    const provenances = await this.reader.provenancesTargeting(ctx, version, [...removedRef], BATCH * 10);
    const handled = new Set<string>();
    const own: string[] = [];
    for (const provenance of provenances) {
      handled.add(provenance._id);
      const resource = JSON.parse(provenance.json ?? '{}') as { target?: Array<{ reference?: string }> };
      const kept = (resource.target ?? []).filter(
        ({ reference }) => !removedRef.has(String(reference).split('/_history/')[0]),
      );
      if (kept.length === 0) {
        own.push(provenance._id);
        continue;
      }
      await store.rewriteInPlace(version, provenance._id, provenance.vid!, { ...resource, target: kept });
    }
    if (own.length > 0) count('Provenance', await store.removeForGood(own));
    const byType = new Map<string, string[]>();
    for (const doc of docs) {
      if (!handled.has(doc._id)) byType.set(doc.t, [...(byType.get(doc.t) ?? []), doc._id]);
    }
    for (const [type, keys] of byType) count(type, await store.removeForGood(keys));
  }
}
