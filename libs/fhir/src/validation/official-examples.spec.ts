import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import type { DefinedFhirVersion } from '../definitions/fhir-version';
import { packageDirectory, readPackageJson } from '../definitions/structure-definitions';
import { KNOWN_INVALID_EXAMPLES, KNOWN_RULE_BREAKS } from '@app/testing/known-invalid-examples';
import { validateResource } from './validate-resource';

/** Every instance file of the HL7 example packages (conformance resources included). */
function exampleFiles(version: DefinedFhirVersion): { file: string; resource: unknown }[] {
  const directory = packageDirectory(version);
  return readdirSync(directory)
    .filter((file) => file.endsWith('.json') && file !== 'package.json')
    .map((file) => ({ file, resource: readPackageJson(join(directory, file)) }))
    .filter(({ resource }) => typeof (resource as { resourceType?: unknown }).resourceType === 'string');
}

describe.each(['r4', 'stu3'] as const)('official %s examples', (version) => {
  const examples = exampleFiles(version);
  const knownInvalid = KNOWN_INVALID_EXAMPLES[version];

  it('covers the whole package', () => {
    expect(examples.length).toBeGreaterThan(version === 'r4' ? 5000 : 8000);
  });

  it('validate without errors, except the known-invalid ones, which break exactly the listed rules', () => {
    const failures: Record<string, string[]> = {};
    const ruleBreaks: Record<string, string[]> = {};
    for (const { file, resource } of examples) {
      if (knownInvalid[file]) continue;
      const errors = validateResource(version, resource).filter((i) => i.severity === 'error');
      if (errors.length === 0) continue;
      if (KNOWN_RULE_BREAKS[version][file])
        ruleBreaks[file] = [...new Set(errors.map((i) => i.rule ?? i.code))].sort();
      else failures[file] = errors.slice(0, 5).map((i) => `${i.path}: ${i.message}`);
    }
    expect(failures).toEqual({});
    expect(ruleBreaks).toEqual(KNOWN_RULE_BREAKS[version]);
  });

  it('reports every known-invalid example (the list stays honest)', () => {
    const byFile = new Map(examples.map((e) => [e.file, e.resource]));
    for (const file of Object.keys(knownInvalid)) {
      expect(byFile.has(file)).toBe(true);
      expect(validateResource(version, byFile.get(file)).length).toBeGreaterThan(0);
    }
  });
});
