/**
 * Validation throughput on the Synthea R4 set (all resources of all patient Bundles) with every check
 * on: structure, terminology, invariants, narrative, dates, units. Also the memory of the loaded
 * tables (definitions, code systems, expansions, compiled invariants), measured as heap growth.
 * Run: node --expose-gc -r ts-node/register/transpile-only -r tsconfig-paths/register bench/validate.ts
 * Prints a table and writes bench/results/validate.json.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { resourceTypes, structureDefinitions, validateResource } from '@app/fhir';
import { terminology } from '../libs/fhir/src/terminology/terminology';
import { loadSyntheaResources, SYNTHEA_KNOWN_DEFECTS } from '../test/support/synthea-data';

function heapMb(): number {
  global.gc?.();
  return process.memoryUsage().heapUsed / 1024 / 1024;
}

const ROUNDS = Number(process.env.ROUNDS ?? 3);

function main(): void {
  const resources = loadSyntheaResources('r4');
  const byType = new Map<string, unknown[]>();
  for (const resource of resources) {
    const type = (resource as { resourceType: string }).resourceType;
    const list = byType.get(type) ?? [];
    list.push(resource);
    byType.set(type, list);
  }

  const heapBefore = heapMb();
  const loadStart = performance.now();
  structureDefinitions('r4');
  resourceTypes('r4');
  terminology('r4');
  const definitionsMs = performance.now() - loadStart;

  // Warm-up round compiles every element table and regex once.
  const firstStart = performance.now();
  let issues = 0;
  let refused = 0;
  for (const resource of resources) {
    const found = validateResource('r4', resource);
    issues += found.filter((i) => i.severity === 'error').length;
    if (found.some((i) => i.severity === 'error')) refused++;
  }
  const firstRoundMs = performance.now() - firstStart;
  // Everything compiled now: the heap growth is the tables' memory (the resources were loaded before).
  const tablesMb = heapMb() - heapBefore;
  const expectedRefused = Object.values(SYNTHEA_KNOWN_DEFECTS.r4).reduce((a, b) => a + b, 0);

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
  // CPU time of this process as well as wall time: on a shared, loaded machine the CPU per resource
  // is the steadier figure (wall time counts the time other processes held the cores).
  const cpuStart = process.cpuUsage();
  for (let round = 0; round < ROUNDS; round++)
    for (const resource of resources) validateResource('r4', resource);
  const total = row('ALL', resources.length, (performance.now() - start) / ROUNDS);
  const cpu = process.cpuUsage(cpuStart);
  const cpuMicrosPerResource = (cpu.user + cpu.system) / (ROUNDS * resources.length);

  console.table([...rows, total]);
  const stats = terminology('r4').stats();
  console.log(
    `definitions and terminology loaded in ${definitionsMs.toFixed(0)} ms; first (cold) round ` +
      `${firstRoundMs.toFixed(0)} ms; refused ${refused} resources (${issues} errors; Synthea's known ` +
      `defects: ${expectedRefused}); tables ${tablesMb.toFixed(1)} MB of heap ` +
      `(${stats.codeSystems} code systems, ${stats.concepts} concepts, ${stats.boundValueSets} bound value sets ` +
      `expanded to ${stats.boundCodes} codes)`,
  );
  console.log(
    `CPU per resource (all rounds): ${cpuMicrosPerResource.toFixed(1)} µs = ${Math.round(1e6 / cpuMicrosPerResource)} resources per CPU second`,
  );
  if (refused !== expectedRefused) console.error(`expected ${expectedRefused} refusals, found ${refused}`);
  const results = {
    benchmark: 'validate',
    fhirVersion: 'r4',
    date: new Date().toISOString(),
    node: process.version,
    rounds: ROUNDS,
    definitionsLoadMs: round1(definitionsMs),
    coldRoundMs: round1(firstRoundMs),
    errors: issues,
    refused,
    cpuMicrosPerResource: round1(cpuMicrosPerResource),
    expectedRefused,
    tablesHeapMb: round1(tablesMb),
    terminology: stats,
    total,
    summary: [
      {
        figure: 'validation, all checks (Synthea R4)',
        value: total.perSecond,
        unit: 'resources/s',
        target: '≥ 20,000',
      },
      { figure: 'validation tables in memory', value: round1(tablesMb), unit: 'MB' },
    ],
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
