import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { loadSyntheaResources, SYNTHEA_DIRECTORY } from './synthea-data';
import { validateResource } from './validate-resource';

// The whole set takes about a second per version, so every resource is validated, not a sample.
describe.each(['r4', 'stu3', 'dstu2'] as const)('Synthea %s resources', (version) => {
  const archive = join(SYNTHEA_DIRECTORY, `synthea-${version}.tgz`);
  const run = existsSync(archive) ? it : it.skip;

  run(
    'all validate without issues',
    () => {
      const resources = loadSyntheaResources(version);
      expect(resources.length).toBeGreaterThan(30000);
      const failures: string[] = [];
      for (const resource of resources) {
        for (const issue of validateResource(version, resource)) {
          if (failures.length < 20) failures.push(`${issue.path}: ${issue.message}`);
        }
      }
      expect(failures).toEqual([]);
    },
    120_000,
  );
});
