import { Inject, Injectable } from '@nestjs/common';
import { extractIndex, type FhirVersion } from '@app/fhir';
import { SETTINGS } from '../../../config/config.module';
import type { Settings } from '../../../config/settings';
import { ReindexRepository, type IndexUpdate } from '../../../storage/reindex.repository';
import { indexOptions } from '../../../storage/search-indexing';

const BATCH = 500;

export interface ReindexReport {
  version: FhirVersion;
  type?: string;
  scanned: number;
  updated: number;
  /** Changed by a writer meanwhile (its new version already has a fresh index). */
  skipped: number;
  /** Stored JSON the extraction could not read (left as it was). */
  failed: number;
  seconds: number;
}

/**
 * Rebuilds the search index entries (`idx`) of stored resources after the search-parameter
 * definitions or the extraction changed, or full text was switched on or off (FHIR_FULLTEXT:
 * the words are added or dropped) (`store reindex [--version v] [--type T]`).
 */
@Injectable()
export class ReindexService {
  constructor(
    private readonly repository: ReindexRepository,
    @Inject(SETTINGS) private readonly settings: Settings,
  ) {}

  async reindex(
    version: FhirVersion,
    type: string | undefined,
    progress: (message: string) => void,
  ): Promise<ReindexReport> {
    const started = Date.now();
    const expected = await this.repository.count(version, type);
    const report: ReindexReport = {
      version,
      type,
      scanned: 0,
      updated: 0,
      skipped: 0,
      failed: 0,
      seconds: 0,
    };
    let after: string | undefined;
    for (;;) {
      const batch = await this.repository.nextBatch(version, type, after, BATCH);
      if (batch.length === 0) break;
      after = batch[batch.length - 1]._id;
      const updates: IndexUpdate[] = [];
      for (const doc of batch) {
        try {
          updates.push({
            key: doc._id,
            vid: doc.vid,
            idx: extractIndex(
              version,
              JSON.parse(doc.json ?? 'null') as Record<string, unknown>,
              indexOptions(this.settings),
            ),
          });
        } catch {
          report.failed++;
        }
      }
      const applied = await this.repository.applyIndexes(updates);
      report.scanned += batch.length;
      report.updated += applied;
      report.skipped += updates.length - applied;
      progress(`reindex ${version}${type ? ` ${type}` : ''}: ${report.scanned}/${expected}`);
    }
    report.seconds = Math.round((Date.now() - started) / 100) / 10;
    return report;
  }
}
