/**
 * Search-index extraction throughput (libs/fhir/src/search extractIndex) over every Synthea sample
 * resource of each FHIR version. Prints a table and writes bench/results/index-extract.json.
 * Run: npx ts-node --transpile-only bench/index-extract.ts
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { cpus } from 'node:os';
import { extractIndex } from '../libs/fhir/src/search/index-extraction';
import {
  loadSyntheaResources,
  syntheaAvailable,
  type SyntheaArchiveVersion,
} from '../test/support/synthea-data';

interface VersionResult {
  version: SyntheaArchiveVersion;
  resources: number;
  firstPassMs: number;
  steadyMs: number;
  resourcesPerSecond: number;
  avgEntriesPerResource: number;
  avgIndexBytes: number;
}

function entryCount(index: ReturnType<typeof extractIndex>): number {
  return (
    (index.tok?.length ?? 0) +
    (index.str?.length ?? 0) +
    (index.ref?.length ?? 0) +
    (index.uri?.length ?? 0) +
    (index.dtl?.length ?? 0) +
    (index.num?.length ?? 0) +
    (index.qty?.length ?? 0) +
    (index.txt?.length ?? 0)
  );
}

function measure(version: SyntheaArchiveVersion): VersionResult {
  const resources = loadSyntheaResources(version);
  // First pass includes loading the definitions and compiling every expression of the types seen.
  let started = process.hrtime.bigint();
  let entries = 0;
  let bytes = 0;
  for (const resource of resources) {
    const index = extractIndex(version, resource);
    entries += entryCount(index);
    bytes += JSON.stringify(index).length;
  }
  const firstPassMs = Number(process.hrtime.bigint() - started) / 1e6;
  const rounds = 3;
  started = process.hrtime.bigint();
  for (let round = 0; round < rounds; round++)
    for (const resource of resources) extractIndex(version, resource);
  const steadyMs = Number(process.hrtime.bigint() - started) / 1e6 / rounds;
  return {
    version,
    resources: resources.length,
    firstPassMs: Math.round(firstPassMs),
    steadyMs: Math.round(steadyMs),
    resourcesPerSecond: Math.round((resources.length / steadyMs) * 1000),
    avgEntriesPerResource: Math.round((entries / resources.length) * 10) / 10,
    avgIndexBytes: Math.round(bytes / resources.length),
  };
}

const versions = (['r4', 'stu3', 'dstu2'] as const).filter((version) => syntheaAvailable(version));
const results = versions.map(measure);
console.table(results);
const output = {
  benchmark: 'index-extract',
  date: new Date().toISOString(),
  node: process.version,
  cpu: cpus()[0]?.model,
  singleThread: true,
  results,
};
const directory = join(__dirname, 'results');
mkdirSync(directory, { recursive: true });
writeFileSync(join(directory, 'index-extract.json'), JSON.stringify(output, null, 2) + '\n');
