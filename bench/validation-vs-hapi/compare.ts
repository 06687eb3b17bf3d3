/**
 * Our validator against HAPI FHIR 7.6's FhirInstanceValidator (the reference) on one corpus: Synthea
 * resources unchanged, the same broken one rule at a time in every rule class (mutations.ts, R4), Bundle
 * rule cases (R4), every example of the version's examples package, and every JSON instance of HL7's
 * validator test suite (fhir-test-cases, validator/manifest.json) for the version. Prints agreement per
 * class and writes bench/results/validation-vs-hapi[-stu3].json. Not part of `npm test` (needs Java and
 * Maven). FHIR_VERSION=r4 (default) or stu3; FHIR_TEST_CASES = a git directory of
 * github.com/FHIR/fhir-test-cases (the class is skipped without it); CLASSES=fhir-test-cases,hl7-examples
 * keeps only those classes (HAPI then validates only what they miss in its cache: minutes, not half an
 * hour, while a rule is being written; the figures to report are those of the whole corpus).
 * Run: npx ts-node --transpile-only -r tsconfig-paths/register bench/validation-vs-hapi/compare.ts
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  appendFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { validateResource } from '@app/fhir';
import type { DefinedFhirVersion } from '../../libs/fhir/src/definitions/fhir-version';
import { packageDirectory, readPackageJson } from '../../libs/fhir/src/definitions/structure-definitions';
import { loadSyntheaResources } from '../../test/support/synthea-data';
import { bundleCases, MUTATIONS, type Json } from './mutations';

export interface Case {
  cls: string;
  name: string;
  resource: Json;
}
interface HapiIssue {
  severity: string;
  location: string;
  messageId: string;
  message: string;
}

const HERE = __dirname;

/**
 * HAPI errors that are not rules of the base specification for a posted resource, left out of the
 * comparison and counted on their own (each named in docs/validation.md):
 */
const OUT_OF_SCOPE: readonly [RegExp, string][] = [
  [/^VALIDATION_HL7_(WG|PUBLISHER)/, 'HL7 publication policy for resources with hl7.org URLs'],
  [/^exception$/, 'HAPI crashed (NullPointerException in its resource fetcher)'],
  [
    /^Problem_processing_expression/,
    "HAPI could not evaluate a published invariant (sdf-10 in its STU3 copy reads '#39;' for a quote)",
  ],
  [
    // the STU3 validator spells some ids in mixed case (CodeSystem_CS_VS_Invalid)
    /^(ED_|SD_|SM_|VALUESET_|CODESYSTEM_|MEASURE_|ERROR_GENERATING_SNAPSHOT)/i,
    'content rules of conformance resources (profiles, value sets, maps)',
  ],
  [
    /^(Extension_EXT|Validation_VAL_Profile_Unknown)/,
    'extension and profile definitions this server does not hold',
  ],
  [/^BUNDLE_BUNDLE_ENTRY_NOTFOUND/, 'resolution of references between Bundle entries'],
];
/** HAPI 7.6 rejects Bundle.link.relation inside a Bundle nested in a Bundle entry: its own defect. */
const HAPI_DEFECTS: readonly RegExp[] = [/Unrecognized property 'relation'/];
// (HAPI also rejects Specimen.collection.collector inside a contained Specimen: counted as a miss.)
/**
 * Snapshot slicing rules of StructureDefinitions (profile content, reported without a message id by
 * the snapshot generator: ProfilePathProcessor's ATTEMPT_TO_CHANGE_SLICING and its slicing entry rule).
 */
const PROFILE_CONTENT: readonly RegExp[] = [
  /launches straight into slicing/,
  /tries to redefine the slicing/,
];

function outOfScope(issue: HapiIssue): string | undefined {
  if (HAPI_DEFECTS.some((d) => d.test(issue.message))) return 'HAPI defect: nested Bundle.link';
  if (PROFILE_CONTENT.some((d) => d.test(issue.message)))
    return 'content rules of conformance resources (profiles, value sets, maps)';
  return OUT_OF_SCOPE.find(([pattern]) => pattern.test(issue.messageId ?? ''))?.[1];
}
const VALID_PER_TYPE = Number(process.env.VALID_PER_TYPE ?? 150);
const BASES_PER_MUTATION = Number(process.env.BASES_PER_MUTATION ?? 3);
const WITH_EXAMPLES = process.env.EXAMPLES !== '0';
const VERSION: DefinedFhirVersion = process.env.FHIR_VERSION === 'stu3' ? 'stu3' : 'r4';
/** The manifest's `version` values of the instances each corpus takes from fhir-test-cases. */
const TEST_CASE_VERSIONS: Record<DefinedFhirVersion, readonly string[]> = {
  r4: ['4.0', '4.0.1'],
  stu3: ['3.0', '3.0.1'],
};

/** Every JSON instance of fhir-test-cases' validator suite for VERSION (each file once). */
function testCaseResources(): Case[] {
  const gitDir = process.env.FHIR_TEST_CASES;
  if (!gitDir) return [];
  const git = (args: string[]) =>
    execFileSync('git', ['--git-dir', gitDir, ...args], { encoding: 'utf8', maxBuffer: 1 << 28 });
  const manifest = JSON.parse(git(['show', 'HEAD:validator/manifest.json'])) as {
    'test-cases': { name: string; file: string; version?: string }[];
  };
  const files = new Set<string>();
  const cases: Case[] = [];
  for (const test of manifest['test-cases']) {
    if (!TEST_CASE_VERSIONS[VERSION].includes(test.version ?? '')) continue;
    if (!test.file.endsWith('.json') || files.has(test.file)) continue;
    files.add(test.file);
    let resource: Json;
    try {
      resource = JSON.parse(git(['show', `HEAD:validator/${test.file}`])) as Json;
    } catch {
      continue; // not JSON at all (a format test): no resource to compare
    }
    if (typeof resource?.resourceType === 'string')
      cases.push({ cls: 'fhir-test-cases', name: test.file, resource });
  }
  return cases;
}

export function buildCorpus(): Case[] {
  const synthea = loadSyntheaResources(VERSION) as Json[];
  const byType = new Map<string, Json[]>();
  for (const resource of synthea) {
    // Bases must be valid for us; Synthea's own defects (8 UCUM codes) are counted in the 'synthea' class.
    const list = byType.get(resource.resourceType) ?? [];
    list.push(resource);
    byType.set(resource.resourceType, list);
  }
  const cases: Case[] = [];
  for (const [type, list] of byType) {
    const step = Math.max(1, Math.floor(list.length / VALID_PER_TYPE));
    for (let i = 0; i < list.length && i / step < VALID_PER_TYPE; i += step)
      cases.push({ cls: 'synthea', name: type, resource: list[i] });
  }
  for (const resource of synthea) {
    const isDefect = validateResource(VERSION, resource).some((i) => i.severity === 'error');
    if (isDefect) cases.push({ cls: 'synthea', name: `${resource.resourceType} (defect)`, resource });
  }
  // The mutations and Bundle cases are written against R4 resources.
  for (const mutation of VERSION === 'r4' ? MUTATIONS : []) {
    const list = (byType.get(mutation.type) ?? []).filter(
      (r) => !validateResource(VERSION, r).some((i) => i.severity === 'error'),
    );
    let made = 0;
    const step = Math.max(1, Math.floor(list.length / (BASES_PER_MUTATION * 4)));
    for (let i = 0; i < list.length && made < BASES_PER_MUTATION; i += step) {
      const copy = structuredClone(list[i]);
      if (mutation.apply(copy) === false) continue;
      cases.push({ cls: mutation.cls, name: mutation.name, resource: copy });
      made++;
    }
  }
  if (VERSION === 'r4') cases.push(...bundleCases([byType.get('Patient')![0], byType.get('Patient')![1]]));
  if (WITH_EXAMPLES) {
    const directory = packageDirectory(VERSION);
    for (const file of readdirSync(directory).sort()) {
      if (!file.endsWith('.json') || file === 'package.json') continue;
      const resource = readPackageJson(join(directory, file)) as Json;
      if (typeof resource.resourceType === 'string')
        cases.push({ cls: 'hl7-examples', name: file, resource });
    }
  }
  cases.push(...testCaseResources());
  return cases;
}

type HapiResult = { issues: HapiIssue[]; ms: number };

/** HAPI takes minutes on the corpus: answers are cached by resource hash under target/ (not in git). */
function runHapi(cases: readonly Case[]): HapiResult[] {
  const cacheFile = join(
    HERE,
    'target',
    VERSION === 'r4' ? 'hapi-cache.ndjson' : `hapi-cache-${VERSION}.ndjson`,
  );
  const cache = new Map<string, HapiResult>();
  if (existsSync(cacheFile)) {
    for (const line of readFileSync(cacheFile, 'utf8').split('\n')) {
      if (!line) continue;
      const { hash, result } = JSON.parse(line) as { hash: string; result: HapiResult };
      cache.set(hash, result);
    }
  }
  const hashes = cases.map((c) => createHash('sha1').update(JSON.stringify(c.resource)).digest('hex'));
  const missing = cases.filter((_, i) => !cache.has(hashes[i]));
  const missingHashes = hashes.filter((h) => !cache.has(h));
  if (missing.length > 0) {
    const fresh = runHapiProcess(missing);
    mkdirSync(join(HERE, 'target'), { recursive: true });
    appendFileSync(
      cacheFile,
      fresh.map((result, i) => JSON.stringify({ hash: missingHashes[i], result })).join('\n') + '\n',
    );
    fresh.forEach((result, i) => cache.set(missingHashes[i], result));
  }
  return hashes.map((h) => cache.get(h) as HapiResult);
}

function runHapiProcess(cases: readonly Case[]): HapiResult[] {
  if (!existsSync(join(HERE, 'target', 'lib'))) {
    console.error('building the HAPI harness with Maven (first run downloads HAPI 7.6.1)…');
    execFileSync('mvn', ['-q', '-B', 'package', '-DskipTests'], { cwd: HERE, stdio: 'inherit' });
  }
  const directory = mkdtempSync(join(tmpdir(), 'hapi-corpus-'));
  try {
    const input = join(directory, 'corpus.ndjson');
    writeFileSync(input, cases.map((c) => JSON.stringify(c.resource)).join('\n') + '\n');
    const classpath = `${join(HERE, 'target', 'classes')}:${join(HERE, 'target', 'lib', '*')}`;
    const started = performance.now();
    const result = spawnSync(
      'bash',
      ['-c', `java -Xmx4g -cp '${classpath}' bench.HapiValidate ${VERSION} < '${input}'`],
      {
        maxBuffer: 1024 * 1024 * 1024,
        encoding: 'utf8',
      },
    );
    if (result.status !== 0) throw new Error(`HAPI harness failed: ${result.stderr}`);
    console.error(
      `HAPI validated ${cases.length} resources in ${((performance.now() - started) / 1000).toFixed(0)} s`,
    );
    // HL7's validator prints some notes (e.g. "Can't find …") on stdout too: keep the answer lines.
    const answers: HapiResult[] = [];
    for (const line of result.stdout.split('\n')) {
      if (!line.startsWith('{"i":')) continue;
      const answer = JSON.parse(line) as HapiResult & { i: number };
      answers[answer.i] = { issues: answer.issues, ms: answer.ms };
    }
    if (answers.length !== cases.length || answers.includes(undefined as never))
      throw new Error(`HAPI answered ${answers.length} of ${cases.length} resources`);
    return answers;
  } finally {
    rmSync(directory, { recursive: true, force: true });
  }
}

/** CLASSES=a,b: only the cases of those classes. */
export function selectedClasses(cases: Case[]): Case[] {
  const classes = process.env.CLASSES?.split(',').filter(Boolean);
  return classes ? cases.filter((c) => classes.includes(c.cls)) : cases;
}

function main(): void {
  const cases = selectedClasses(buildCorpus());
  console.error(`corpus: ${cases.length} resources`);
  const hapi = runHapi(cases);
  for (const c of cases) validateResource(VERSION, c.resource); // warm-up: compile tables and expansions
  const started = performance.now();
  const ours = cases.map((c) => validateResource(VERSION, c.resource));
  const oursMs = performance.now() - started;
  const excluded = new Map<string, number>();

  const rows = new Map<
    string,
    { cases: number; hapi: number; ours: number; both: number; missed: number; extra: number }
  >();
  const details: Json[] = [];
  cases.forEach((c, i) => {
    const hapiAll = hapi[i].issues.filter((x) => x.severity === 'error' || x.severity === 'fatal');
    const hapiErrors = hapiAll.filter((x) => !outOfScope(x));
    if (hapiErrors.length === 0 && hapiAll.length > 0) {
      const reason = outOfScope(hapiAll[0]) as string;
      excluded.set(reason, (excluded.get(reason) ?? 0) + 1);
      // HAPI threw before judging the resource: no verdict to compare ours with (not an extra)
      if (hapiAll.some((x) => x.messageId === 'exception')) return;
    }
    const ourErrors = ours[i].filter((x) => x.severity === 'error');
    const row = rows.get(c.cls) ?? { cases: 0, hapi: 0, ours: 0, both: 0, missed: 0, extra: 0 };
    row.cases++;
    if (hapiErrors.length > 0) row.hapi++;
    if (ourErrors.length > 0) row.ours++;
    if (hapiErrors.length > 0 && ourErrors.length > 0) row.both++;
    if (hapiErrors.length > 0 && ourErrors.length === 0) row.missed++;
    if (hapiErrors.length === 0 && ourErrors.length > 0) row.extra++;
    rows.set(c.cls, row);
    if (hapiErrors.length > 0 !== ourErrors.length > 0 || c.cls !== 'hl7-examples') {
      details.push({
        cls: c.cls,
        name: c.name,
        verdict:
          hapiErrors.length > 0 === ourErrors.length > 0
            ? 'agree'
            : hapiErrors.length > 0
              ? 'missed'
              : 'extra',
        hapi: hapiErrors.map((x) => `${x.location}: [${x.messageId}] ${x.message}`.slice(0, 300)),
        ours: ourErrors.map((x) => `${x.path}: [${x.rule ?? x.code}] ${x.message}`.slice(0, 300)),
      });
    }
  });
  const table = [...rows].map(([cls, r]) => ({
    class: cls,
    cases: r.cases,
    hapiFlags: r.hapi,
    oursFlags: r.ours,
    caught: r.both,
    missed: r.missed,
    extra: r.extra,
    catchRate: r.hapi === 0 ? '-' : `${((100 * r.both) / r.hapi).toFixed(1)}%`,
  }));
  const total = table.reduce(
    (t, r) => ({
      cases: t.cases + r.cases,
      hapi: t.hapi + r.hapiFlags,
      both: t.both + r.caught,
      missed: t.missed + r.missed,
      extra: t.extra + r.extra,
    }),
    { cases: 0, hapi: 0, both: 0, missed: 0, extra: 0 },
  );
  console.table([
    ...table,
    {
      class: 'ALL',
      cases: total.cases,
      hapiFlags: total.hapi,
      oursFlags: '',
      caught: total.both,
      missed: total.missed,
      extra: total.extra,
      catchRate: `${((100 * total.both) / total.hapi).toFixed(1)}%`,
    },
  ]);
  console.log('resources HAPI refuses only for reasons outside the base specification (not counted above):');
  console.table([...excluded].map(([reason, count]) => ({ reason, resources: count })));
  const hapiMs = hapi.reduce((t, h) => t + h.ms, 0);
  console.log(
    `speed on this corpus: ours ${Math.round((cases.length / oursMs) * 1000)} resources/s, HAPI ${Math.round((cases.length / hapiMs) * 1000)} resources/s (validation time only)`,
  );
  for (const d of details.filter((x) => x.verdict !== 'agree').slice(0, Number(process.env.SHOW ?? 40)))
    console.log(
      `${d.verdict} ${d.cls} ${d.name}\n  HAPI: ${d.hapi.slice(0, 3).join('\n        ')}\n  ours: ${d.ours.slice(0, 3).join('\n        ')}`,
    );
  const results = join(HERE, '..', 'results');
  mkdirSync(results, { recursive: true });
  writeFileSync(
    join(results, VERSION === 'r4' ? 'validation-vs-hapi.json' : `validation-vs-hapi-${VERSION}.json`),
    `${JSON.stringify({ benchmark: 'validation-vs-hapi', date: new Date().toISOString(), table, total, excluded: Object.fromEntries(excluded), oursMs, hapiMs, details }, null, 2)}\n`,
  );
}

// Run as a script; other tools import the corpus (buildCorpus) without running HAPI.
if (require.main === module) main();
