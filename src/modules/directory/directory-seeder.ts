import { existsSync, readFileSync } from 'fs';
import { dirname, join } from 'path';
import { Inject, Injectable, Logger, OnApplicationBootstrap } from '@nestjs/common';
import { SETTINGS } from '../../config/config.module';
import { Settings } from '../../config/settings';
import { parseNdjson } from './directory-import-parser';
import { DirectoryService } from './directory.service';

export const SEED_FILE = join('seed', 'directory-seed.ndjson');

/** The committed seed file, found from the source tree (ts-node, jest) and from dist/ alike. */
export function findSeedFile(from = __dirname): string | null {
  for (let dir = from; ; dir = dirname(dir)) {
    const candidate = join(dir, SEED_FILE);
    if (existsSync(candidate)) return candidate;
    if (dirname(dir) === dir) return null;
  }
}

/**
 * Loads the shipped seed (real Massachusetts hospitals and the payers of the Synthea sample data,
 * built by scripts/generate-directory-seed.ts) on a start with an empty directory, so a new
 * deployment has a usable picker. `DIRECTORY_SEED=false` turns it off. Two instances starting at
 * once both insert the same ids: the second one's duplicates are skipped.
 */
@Injectable()
export class DirectorySeeder implements OnApplicationBootstrap {
  private readonly logger = new Logger('Directory');

  constructor(
    private readonly directory: DirectoryService,
    @Inject(SETTINGS) private readonly settings: Settings,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    if (!this.settings.directorySeed) return;
    if ((await this.directory.count()) > 0) return;
    const file = findSeedFile();
    if (!file) {
      this.logger.warn(`directory is empty and ${SEED_FILE} was not found: nothing seeded`);
      return;
    }
    const summary = await this.directory.seedRecords(parseNdjson(readFileSync(file, 'utf8')));
    this.logger.log(
      `directory seeded from ${SEED_FILE}: ${summary.inserted} inserted, ${summary.rejected.length} rejected`,
    );
    for (const r of summary.rejected) this.logger.warn(`seed line ${r.line} rejected: ${r.reason}`);
  }
}
