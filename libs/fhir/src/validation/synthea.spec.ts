import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { loadSyntheaResources, SYNTHEA_DIRECTORY, SYNTHEA_KNOWN_DEFECTS } from '@app/testing/synthea-data';
import { validateResource } from './validate-resource';

// The whole set takes a few seconds per version, so every resource is validated, not a sample.
describe.each(['r4', 'stu3', 'dstu2'] as const)('Synthea %s resources', (version) => {
  const archive = join(SYNTHEA_DIRECTORY, `synthea-${version}.tgz`);
  const run = existsSync(archive) ? it : it.skip;

  run(
    "validate without errors, except Synthea's own known defects (which the reference reports too)",
    () => {
      const resources = loadSyntheaResources(version);
      expect(resources.length).toBeGreaterThan(30000);
      const refused: Record<string, number> = {};
      for (const resource of resources) {
        const errors = validateResource(version, resource).filter((i) => i.severity === 'error');
        if (errors.length === 0) continue;
        const key = `${(resource as { resourceType: string }).resourceType} ${errors[0].rule ?? errors[0].code}`;
        refused[key] = (refused[key] ?? 0) + 1;
      }
      expect(refused).toEqual(SYNTHEA_KNOWN_DEFECTS[version]);
    },
    180_000,
  );
});
