import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import type { DefinedFhirVersion } from '../definitions/fhir-version';
import { packageDirectory, readPackageJson } from '../definitions/structure-definitions';
import { fhirpathModel } from './fhirpath-expressions';
import { unwrapNode } from './index-builder';
import { compiledParamsFor } from './search-parameter-registry';
import { compileSimplePath } from './simple-paths';
import { loadSyntheaResources, syntheaAvailable } from '@app/testing/synthea-data';

type Json = Record<string, unknown>;

/** What extraction reads of each node (index-builder.ts): value and data type, null and absent skipped. */
function seen(nodes: readonly unknown[]): Array<{ value: unknown; dataType?: string }> {
  return nodes.map(unwrapNode).filter(({ value }) => value !== undefined && value !== null);
}

/** Every resource of `resources` against each parameter expression of its type walked directly. */
function compareOn(
  version: DefinedFhirVersion,
  resources: readonly Json[],
): { paths: number; values: number } {
  const paths = new Set<unknown>();
  let values = 0;
  for (const resource of resources) {
    const type = resource.resourceType as string;
    for (const param of compiledParamsFor(version, type).params) {
      for (const expression of param.compiled) {
        if (expression.evaluate === expression.byEngine) continue;
        paths.add(expression);
        const direct = seen(expression.evaluate(resource));
        values += direct.length;
        expect({ type, param: param.code, values: direct }).toEqual({
          type,
          param: param.code,
          values: seen(expression.byEngine(resource)),
        });
      }
    }
  }
  return { paths: paths.size, values };
}

function examples(version: DefinedFhirVersion): Json[] {
  const directory = packageDirectory(version);
  return readdirSync(directory)
    .filter((file) => file.endsWith('.json') && file !== 'package.json')
    .map((file) => readPackageJson(join(directory, file)) as Json)
    .filter((resource) => typeof resource.resourceType === 'string');
}

describe('member paths walked directly give what fhirpath.js gives', () => {
  it('on every official R4 example', () => {
    const { paths, values } = compareOn('r4', examples('r4'));
    // Most parameters are plain member paths: the direct walk must actually be in use.
    expect(paths).toBeGreaterThan(300);
    expect(values).toBeGreaterThan(10_000);
  });

  (syntheaAvailable('r4') ? it : it.skip)('on Synthea R4 records', () => {
    const { values } = compareOn('r4', loadSyntheaResources('r4', 10));
    expect(values).toBeGreaterThan(10_000);
  });

  it('leaves STU3 to the engine', () => {
    expect(compareOn('stu3', examples('stu3'))).toEqual({ paths: 0, values: 0 });
  });

  it('leaves choices, resources, functions and other types to the engine', () => {
    const model = fhirpathModel('r4');
    const engine = (): unknown[] => ['engine'];
    expect(compileSimplePath(model, 'Observation.value', engine)).toBeUndefined();
    expect(compileSimplePath(model, 'Bundle.entry.resource', engine)).toBeUndefined();
    expect(compileSimplePath(model, 'Resource.meta.tag', engine)).toBeUndefined();
    expect(compileSimplePath(model, 'Patient.name.where(use = "official")', engine)).toBeUndefined();
    expect(compileSimplePath(model, '(Observation.value as Quantity)', engine)).toBeUndefined();
    const name = compileSimplePath(model, 'Patient.name.family', engine);
    expect(name?.({ resourceType: 'Group', name: [{ family: 'x' }] })).toEqual(['engine']);
    expect(
      name?.({ resourceType: 'Patient', name: [{ family: 'a' }, { given: ['b'] }, { family: 'c' }] }),
    ).toEqual([
      { data: 'a', path: 'Patient.name.family', fhirNodeDataType: 'string' },
      { data: 'c', path: 'Patient.name.family', fhirNodeDataType: 'string' },
    ]);
  });
});
