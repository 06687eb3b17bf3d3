import { Injectable } from '@nestjs/common';
import { historyKey, provenanceIdFor, resourceKey } from '@app/fhir';
import type { TenantContext } from '../../tenancy/tenant-context';
import { historyOf, type HistoryDoc, type ResourceDoc } from '../../storage/documents';
import { WriteProtocol } from '../../storage/write-protocol';
import { StoreMaintenanceRepository } from '../../storage/maintenance.repository';

export interface StoreCheckReport {
  resources: number;
  historyRows: number;
  /** Current versions without their history row (crash between write steps 1 and 2). */
  missingHistory: number;
  /** History rows of resources that no longer exist (crash during a removal). */
  orphanHistory: number;
  /** Stored versions of non-Provenance resources without their Provenance (crash before step 3). */
  missingProvenance: number;
  repaired: boolean;
}

/** The writer's context for repairs: the owner of the document, as when it was written. */
function ownerContext(doc: Pick<ResourceDoc, 'c' | 'u'>): TenantContext {
  return { clientId: doc.c, userId: doc.u, scopes: [], form: 'client-headers' };
}

/**
 * `store check [--repair]` (docs/storage.md): finds and mends what a process killed between the steps
 * of the write protocol (docs/storage.md) left behind. Safe to run while the service runs: every
 * repair is an idempotent insert with a deterministic key, or a removal of unreachable rows.
 */
@Injectable()
export class StoreCheckService {
  constructor(
    private readonly maintenance: StoreMaintenanceRepository,
    private readonly writer: WriteProtocol,
  ) {}

  async check(repair: boolean, progress?: (message: string) => void): Promise<StoreCheckReport> {
    const report: StoreCheckReport = {
      resources: 0,
      historyRows: 0,
      missingHistory: 0,
      orphanHistory: 0,
      missingProvenance: 0,
      repaired: repair,
    };
    for await (const batch of this.maintenance.currentBatches()) {
      report.resources += batch.length;
      const present = await this.maintenance.existingHistoryKeys(batch.map((d) => historyKey(d._id, d.vid)));
      const missing = batch.filter((d) => !present.has(historyKey(d._id, d.vid)));
      report.missingHistory += missing.length;
      if (repair) await this.maintenance.insertMissing({ history: missing.map(historyOf) });
      // Versions with a history row are checked in the history pass; these have none (yet).
      report.missingProvenance += await this.checkProvenances(missing, repair);
      progress?.(`checked ${report.resources} resources`);
    }
    for await (const batch of this.maintenance.historyBatches()) {
      report.historyRows += batch.length;
      const keys = [...new Set(batch.map((r) => r.rk))];
      const existing = await this.maintenance.existingCurrentKeys(keys);
      const orphans = keys.filter((k) => !existing.has(k));
      report.orphanHistory += batch.filter((r) => !existing.has(r.rk)).length;
      if (repair) await this.maintenance.deleteHistoryOf(orphans);
      report.missingProvenance += await this.checkProvenances(
        batch.filter((r) => existing.has(r.rk)),
        repair,
      );
      progress?.(`checked ${report.historyRows} history rows`);
    }
    return report;
  }

  /** Versions (current or history) that should have a Provenance and do not. */
  private async checkProvenances(
    versions: ReadonlyArray<ResourceDoc | HistoryDoc>,
    repair: boolean,
  ): Promise<number> {
    const needing = versions.filter(
      (d) => !d.del && d.json !== null && d.t !== 'Provenance' && !('gone' in d && d.gone),
    );
    const keyOf = (d: ResourceDoc | HistoryDoc) =>
      resourceKey(d.v, d.c, 'Provenance', provenanceIdFor('rk' in d ? d.rk : d._id, d.vid));
    const present = await this.maintenance.existingCurrentKeys(needing.map(keyOf));
    const missing = await this.notInBundleProvenances(needing.filter((d) => !present.has(keyOf(d))));
    if (repair && missing.length > 0) {
      const provenances = missing.map((d) => {
        const target: ResourceDoc = { ...d, _id: 'rk' in d ? d.rk : d._id };
        return this.writer.provenanceFor(ownerContext(d), d.v, [target], d.vid === 1 ? 'create' : 'update');
      });
      await this.maintenance.insertMissing({ current: provenances, history: provenances.map(historyOf) });
    }
    return missing.length;
  }

  /**
   * Of versions without a Provenance of their own id, those no bundle's Provenance lists either
   * (a bundle's is named after its first target only: WriteProtocol.recordProvenance).
   */
  private async notInBundleProvenances<T extends ResourceDoc | HistoryDoc>(
    versions: readonly T[],
  ): Promise<T[]> {
    const byTenant = new Map<string, T[]>();
    for (const d of versions) byTenant.set(`${d.v}|${d.c}`, [...(byTenant.get(`${d.v}|${d.c}`) ?? []), d]);
    const missing: T[] = [];
    for (const group of byTenant.values()) {
      const { v, c } = group[0];
      const references = [...new Set(group.map((d) => `${d.t}/${d.id}`))];
      const listed = await this.maintenance.provenanceTargets(v, c, references);
      missing.push(...group.filter((d) => !listed.has(`${d.t}/${d.id}/_history/${d.vid}`)));
    }
    return missing;
  }
}
