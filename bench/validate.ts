/**
 * Structural validation throughput on the Synthea R4 set (all resources of all patient Bundles).
 * Run: npx ts-node --transpile-only -r tsconfig-paths/register bench/validate.ts
 * Prints a table and writes bench/results/validate.json.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { resourceTypes, structureDefinitions, validateResource } from '@app/fhir';
import { loadSyntheaResources } from '../libs/fhir/src/validation/synthea-data';

const ROUNDS = Number(process.env.ROUNDS ?? 3);

function main(): void {
  const loadStart = performance.now();
  structureDefinitions('r4');
  resourceTypes('r4');
  const definitionsMs = performance.now() - loadStart;

  const resources = loadSyntheaResources('r4');
  const byType = new Map<string, unknown[]>();
  for (const resource of resources) {
    const type = (resource as { resourceType: string }).resourceType;
    const list = byType.get(type) ?? [];
    list.push(resource);
    byType.set(type, list);
  }

  // Warm-up round compiles every element table and regex once.
  const firstStart = performance.now();
  let issues = 0;
  for (const resource of resources) issues += validateResource('r4', resource).length;
  const firstRoundMs = performance.now() - firstStart;

  const rows: {
    type: string;
    resources: number;
    ms: number;
    perSecond: number;
    microsPerResource: number;
  }[] = [];
  for (const [type, list] of [...byType].sort((a, b) => b[1].length - a[1].length)) {
    const start = performance.now();
    for (let round = 0; round < ROUNDS; round++)
      for (const resource of list) validateResource('r4', resource);
    rows.push(row(type, list.length, (performance.now() - start) / ROUNDS));
  }
  const start = performance.now();
  for (let round = 0; round < ROUNDS; round++)
    for (const resource of resources) validateResource('r4', resource);
  const total = row('ALL', resources.length, (performance.now() - start) / ROUNDS);

  console.table([...rows, total]);
  console.log(
    `definitions loaded in ${definitionsMs.toFixed(0)} ms; first (cold) round ${firstRoundMs.toFixed(0)} ms; ` +
      `issues found: ${issues}`,
  );
  const results = {
    benchmark: 'validate',
    fhirVersion: 'r4',
    date: new Date().toISOString(),
    node: process.version,
    rounds: ROUNDS,
    definitionsLoadMs: round1(definitionsMs),
    coldRoundMs: round1(firstRoundMs),
    issues,
    total,
    byType: rows,
  };
  const directory = join(__dirname, 'results');
  mkdirSync(directory, { recursive: true });
  writeFileSync(join(directory, 'validate.json'), `${JSON.stringify(results, null, 2)}\n`);
}

function row(type: string, count: number, ms: number) {
  return {
    type,
    resources: count,
    ms: round1(ms),
    perSecond: Math.round((count / ms) * 1000),
    microsPerResource: round1((ms * 1000) / count),
  };
}

function round1(value: number): number {
  return Math.round(value * 10) / 10;
}

main();
