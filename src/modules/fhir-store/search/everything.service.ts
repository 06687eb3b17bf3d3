import { Inject, Injectable } from '@nestjs/common';
import {
  issue,
  operationOutcome,
  OperationOutcomeError,
  resourceKey,
  searchsetBundleJson,
  type FhirVersion,
  type Filter,
} from '@app/fhir';
import { SETTINGS } from '../../../config/config.module';
import type { Settings } from '../../../config/settings';
import type { TenantContext } from '../../../tenancy/tenant-context';
import type { FhirReply } from '../fhir-reply';
import { ResourceRepository } from '../resource.repository';
import {
  careDateCondition,
  compartmentFilter,
  compartmentTypes,
  parseEverythingParams,
} from './patient-compartment';
import { resourceEntry, searchLinks, unknownParamsEntry } from './searchset-bundle';
import type { SearchPairs } from './search-request';
import { DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE } from './search.service';
import { storeFilter } from './sub-query-resolver';

/** Compartment resources read per batch: for the references of `$everything`, and per removal round. */
const BATCH = 1000;
/** A compartment larger than this is not walked for its references (the page still answers). */
const MAX_COMPARTMENT_SCAN = 50_000;

const RELATIVE_TARGET = /^([A-Z][A-Za-z]+)\/([A-Za-z0-9\-.]{1,64})$/;

/**
 * `GET /{v}/Patient/{id}/$everything` (SPEC §4.5, https://hl7.org/fhir/R4/patient-operation-everything.html)
 * and `DELETE /{v}/Patient/{id}/$everything` (SPEC §3.1, §4.6), in the caller's tenant scope.
 */
@Injectable()
export class EverythingService {
  constructor(
    private readonly repository: ResourceRepository,
    @Inject(SETTINGS) private readonly settings: Settings,
  ) {}

  /**
   * The Patient, its compartment, and the resources they reference outside it (Practitioner,
   * Organization, Location, Medication …), ordered by resource type then id, paged.
   */
  async everything(
    ctx: TenantContext,
    version: FhirVersion,
    patientId: string,
    pairs: SearchPairs,
  ): Promise<FhirReply> {
    const base = this.settings.urls.base;
    const window = parseEverythingParams(version, pairs, {
      defaultCount: DEFAULT_PAGE_SIZE,
      maxCount: MAX_PAGE_SIZE,
      maxSkip: this.settings.searchMaxSkip,
    });
    await this.requirePatient(ctx, version, patientId);
    const compartment = compartmentFilter(version, patientId, base);
    const referenced = await this.referencedOutsideCompartment(ctx, version, compartment);
    const careDates = careDateCondition(window.start, window.end);
    const branches: Filter[] = [
      { t: 'Patient', id: patientId },
      careDates ? { $and: [compartment, careDates] } : compartment,
    ];
    if (referenced.length > 0) branches.push({ _id: { $in: referenced } });
    const conditions: Filter[] = [{ $or: branches }];
    if (window.types) conditions.push({ t: { $in: window.types } });
    if (window.since) conditions.push({ lu: { $gte: window.since } });
    const filter = storeFilter({ $and: conditions });
    const { docs } = await this.repository.search(ctx, version, {
      filter,
      sort: { t: 1, id: 1 },
      skip: window.skip,
      limit: window.count + 1,
    });
    // The last page tells the total without a second pass over the compartment.
    const lastPage = docs.length <= window.count && (docs.length > 0 || window.skip === 0);
    const total = lastPage
      ? window.skip + docs.length
      : await this.repository.countBy(ctx, version, { filter });
    const entries = docs.slice(0, window.count).map((doc) => resourceEntry(base, doc, 'match'));
    const warnings = unknownParamsEntry(window.unknown);
    if (warnings) entries.push(warnings);
    const links = searchLinks(
      `${base}/${version}/Patient/${patientId}/$everything`,
      pairs.filter(([name]) => name !== '_count' && name !== '_skip'),
      { skip: window.skip, count: window.count, total, hasNext: window.skip + window.count < total },
    );
    return { status: 200, body: searchsetBundleJson({ total, links, entries }) };
  }

  /**
   * Removes the Patient and every resource of its compartment for this tenant, with the
   * Provenances the store wrote for them, following the removal protocol (docs/storage.md:
   * current documents first, then history) batch by batch; the Patient goes last so that an
   * interrupted removal can be run again. 200 with counts per type.
   */
  async removeEverything(ctx: TenantContext, version: FhirVersion, patientId: string): Promise<FhirReply> {
    const patientKey = resourceKey(version, ctx.clientId, 'Patient', patientId);
    const patient = await this.repository.findCurrent(ctx, patientKey);
    if (!patient) throw OperationOutcomeError.notFound(`Patient/${patientId} is not known`);
    const compartment = storeFilter(compartmentFilter(version, patientId, this.settings.urls.base));
    const counts = new Map<string, number>();
    const count = (type: string, removed: number) => counts.set(type, (counts.get(type) ?? 0) + removed);
    for (;;) {
      const batch = await this.repository.findFields(ctx, version, compartment, {}, BATCH);
      if (batch.length === 0) break;
      await this.removeWithProvenances(ctx, version, batch, count);
    }
    await this.removeWithProvenances(ctx, version, [patient], count);
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
    return { status: 200, body: outcome };
  }

  private async requirePatient(ctx: TenantContext, version: FhirVersion, patientId: string): Promise<void> {
    const [patient] = await this.repository.findByKeys(ctx, version, [{ type: 'Patient', id: patientId }]);
    if (!patient) throw OperationOutcomeError.notFound(`Patient/${patientId} is not known`);
  }

  /** Keys of the resources the compartment references whose types are not in the compartment. */
  private async referencedOutsideCompartment(
    ctx: TenantContext,
    version: FhirVersion,
    compartment: Filter,
  ): Promise<string[]> {
    const inCompartment = new Set(compartmentTypes(version).types);
    const prefix = `${this.settings.urls.base}/${version}/`;
    const keys = new Set<string>();
    let after: string | undefined;
    for (let scanned = 0; scanned < MAX_COMPARTMENT_SCAN; scanned += BATCH) {
      const filter = after === undefined ? compartment : { $and: [compartment, { _id: { $gt: after } }] };
      const batch = await this.repository.findFields(
        ctx,
        version,
        storeFilter(filter),
        { 'idx.ref': 1 },
        BATCH,
      );
      for (const doc of batch) {
        for (const entry of (doc.idx as { ref?: string[] } | undefined)?.ref ?? []) {
          let target = entry.slice(entry.indexOf('|') + 1);
          if (target.startsWith(prefix)) target = target.slice(prefix.length);
          const match = RELATIVE_TARGET.exec(target);
          if (match && !inCompartment.has(match[1]))
            keys.add(resourceKey(version, ctx.clientId, match[1], match[2]));
        }
      }
      if (batch.length < BATCH) break;
      after = batch[batch.length - 1]._id;
    }
    return [...keys];
  }

  private async removeWithProvenances(
    ctx: TenantContext,
    version: FhirVersion,
    docs: ReadonlyArray<{ _id: string; t: string; id: string }>,
    count: (type: string, removed: number) => void,
  ): Promise<void> {
    // The Provenances the store wrote for these resources (target `Type/id/_history/n`, indexed as `Type/id`).
    const targets = docs.map((doc) => `target|${doc.t}/${doc.id}`);
    const provenances = await this.repository.findFields(
      ctx,
      version,
      storeFilter({ t: 'Provenance', 'idx.ref': { $in: targets } }),
      {},
      BATCH * 10,
    );
    const removing = new Set(docs.map((doc) => doc._id));
    const own = provenances
      .filter((provenance) => !removing.has(provenance._id))
      .map((provenance) => provenance._id);
    if (own.length > 0) count('Provenance', await this.repository.removeResources(ctx, own));
    const byType = new Map<string, string[]>();
    for (const doc of docs) byType.set(doc.t, [...(byType.get(doc.t) ?? []), doc._id]);
    for (const [type, keys] of byType) count(type, await this.repository.removeResources(ctx, keys));
  }
}
