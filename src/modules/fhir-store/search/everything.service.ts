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
import { compareKeys, everythingPageRows } from './everything-page';
import { parseEverythingParams, type EverythingWindow } from './patient-compartment';
import { resourceEntry, searchLinks, unknownParamsEntry } from './searchset-bundle';
import type { SearchPairs } from '../../../fhir-http/search-pairs';
import { DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE } from '../page-size';

/** Compartment resources removed per round. */
const BATCH = 1000;

/** A page's resources by key and size in page order, and its total if known. */
interface LaidOutPage {
  page: WindowRow[];
  total: number | undefined;
  /** The rows read with their JSON inline: what of it the page does not serve is charged. */
  inline: readonly WindowRow[];
}

/**
 * The JSON the compartment's read brought inline for resources the page does not serve (the row
 * before or after the page, or the byte budget ended the page before them) was read for this request all the same:
 * charged to the client's share as page-budget.ts charges what a page looked at and did not serve.
 */
function chargeInlineUnserved(
  ctx: TenantContext,
  window: readonly WindowRow[],
  served: readonly WindowRow[],
): void {
  const servedKeys = new Set(served.map((ref) => ref._id));
  let bytes = 0;
  for (const row of window) if (typeof row.json === 'string' && !servedKeys.has(row._id)) bytes += row.size;
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
   * `$everything` of one Patient (`patientId`) or of every Patient in the caller's scope, paged
   * (`_count`, `_skip`); `_type`, `_since`, `start`/`end` select what is served.
   */
  async everything(
    ctx: TenantContext,
    version: FhirVersion,
    patientId: string | undefined,
    pairs: SearchPairs,
  ): Promise<Page> {
    const window = parseEverythingParams(version, pairs, {
      defaultCount: DEFAULT_PAGE_SIZE,
      maxCount: MAX_PAGE_SIZE,
      maxSkip: this.settings.searchMaxSkip,
    });
    const scope = this.reader.scope(ctx, version, patientId, window);
    const kept = (doc: SizedRef) =>
      (!window.types || window.types.includes(doc.t)) && (!window.since || doc.lu >= window.since);
    const laidOut = await this.page(ctx, version, scope, window, kept);
    return this.bundle(ctx, version, patientId, pairs, window, laidOut);
  }

  /**
   * A page in everything-page.ts's order. One Patient's: the Patient first, then its compartment by
   * type and, within a type, newest first (the order the references index holds after the
   * compartment's one entry `*patient|Patient/{id}`). Every Patient's (type level): every Patient
   * and every resource in some Patient compartment by type, then id (a user's key-order index
   * holds it). Either way the page reads its rows in index order and stops after them; the
   * resources they reference outside the compartment (Practitioner, Organization …) follow by type
   * and id. Those, and the total, are known only from a pass over the whole compartment (counts
   * and references): it runs for a page that reaches the compartment's end, with
   * `_total=accurate`, or for `_count=0`; another page has no `total`, as a search past its count
   * cap (docs/api.md "Totals").
   */
  private async page(
    ctx: TenantContext,
    version: FhirVersion,
    scope: EverythingScope,
    window: EverythingWindow,
    kept: (doc: SizedRef) => boolean,
  ): Promise<LaidOutPage> {
    const { skip, count } = window;
    const maxBytes = this.settings.searchPageMaxBytes;
    const instance = scope.patient !== undefined;
    // The Patient holds position 0 when it is served: with `_since` that depends on its
    // lastUpdated, so it is read first; else beside the compartment's rows. Its JSON comes inline
    // when the page holds it. Read even when `_type` leaves it out: an unknown Patient is a 404.
    const patientFirst = instance && (!window.types || window.types.includes('Patient'));
    const readPatient = () => this.reader.patient(ctx, version, scope, skip === 0 ? maxBytes : undefined);
    const sincePatient = window.since && patientFirst ? await readPatient() : undefined;
    const first =
      patientFirst && (!window.since || (sincePatient !== undefined && kept(sincePatient))) ? 1 : 0;
    const compartmentStart = Math.max(0, skip - first);
    // the page's positions from the compartment on (all but the Patient's, when the page holds it)
    const compartmentSlots = Math.max(0, count - Math.max(0, first - skip));
    const [patient, compartment] = await Promise.all([
      instance ? (sincePatient ?? readPatient()) : undefined,
      compartmentSlots === 0
        ? []
        : this.reader.compartmentPage(ctx, version, scope, compartmentStart, compartmentSlots, maxBytes),
    ]);
    if (instance && patient === undefined)
      throw OperationOutcomeError.notFound(`Patient/${scope.patient?.id} is not known`);
    // fewer rows than asked: the compartment ends on this page (a full page leaves it to the next)
    const ended = compartment.length < compartmentSlots;
    let outside: SizedRef[] = [];
    let compartmentEnd: number | undefined;
    let total: number | undefined;
    // `_count=0` asks for the total alone (search.html#count)
    if (ended || window.total === 'accurate' || count === 0) {
      const pass = await this.reader.counts(ctx, version, scope);
      const counted = pass.types.reduce((sum, row) => sum + row.count, 0);
      outside = pass.outside.filter(kept).sort(compareKeys);
      // the rows read say where the compartment ends, unless the page starts after it
      compartmentEnd =
        ended && (compartment.length > 0 || compartmentStart === 0)
          ? compartmentStart + compartment.length
          : counted;
      total = first + (ended ? compartmentEnd : counted) + outside.length;
    }
    const lead = first === 1 && patient ? [patient] : [];
    const page = everythingPageRows(
      { lead, compartment, compartmentStart, compartmentEnd, outside },
      skip,
      count,
    );
    return { page, total, inline: patient ? [patient, ...compartment] : compartment };
  }

  /**
   * The searchset of a laid-out page: its slots in order while their JSON fits the page byte budget
   * (at least one; `next` follows them), only the JSON of those read.
   */
  private async bundle(
    ctx: TenantContext,
    version: FhirVersion,
    patientId: string | undefined,
    pairs: SearchPairs,
    window: EverythingWindow,
    { page, total, inline }: LaidOutPage,
  ): Promise<Page> {
    const base = this.settings.urls.base;
    const sizes = page.map((ref) => ref.size);
    const fitting = servedWithinBudget(ctx, sizes, this.settings.searchPageMaxBytes);
    const inBudget = page.slice(0, fitting);
    chargeInlineUnserved(ctx, inline, inBudget);
    // a resource removed since its row was read is left out (`withJson`)
    const docs = await this.withJson(ctx, version, inBudget);
    const entries = docs.map((doc) => resourceEntry(base, doc, 'match'));
    const warnings = unknownParamsEntry(window.unknown);
    if (warnings) entries.push(warnings);
    const served = inBudget.length < window.count ? inBudget.length : undefined;
    const links = searchLinks(
      patientId === undefined
        ? `${base}/${version}/Patient/$everything`
        : `${base}/${version}/Patient/${patientId}/$everything`,
      pairs.filter(([name]) => name !== '_count' && name !== '_skip'),
      {
        skip: window.skip,
        count: window.count,
        total,
        hasNext:
          total === undefined
            ? true
            : window.skip + Math.min(window.count, inBudget.length || window.count) < total,
        served,
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
