/**
 * `npm run bench -- <scenario> [...]` runs one or more scenarios; `npm run bench` runs them all
 * and prints one summary table (scenario, figure, target, engine), written to
 * bench/results/summary.json. Each scenario is a script `bench/<name>.ts` that prints its own
 * table and writes `bench/results/<name>.json`; where that JSON has
 * `summary: [{ figure, value, unit?, target? }]` and `engine`, those rows make the summary.
 * A scenario may be a folder with an `index.ts` (bench/peer); options after one scenario's name
 * go to it: `npm run bench -- peer --ours --base http://127.0.0.1:8080/fhir`.
 */
import { spawnSync } from 'child_process';
import { existsSync, readFileSync, writeFileSync } from 'fs';
import { join } from 'path';

const ORDER = [
  'validate',
  'index-extract',
  'tokens',
  'index-cost',
  'ingest',
  'read',
  'search',
  'write-transactions',
  'export',
  'purge',
  'directory',
  'load',
  'fairness',
  'refusal-cost',
  'cluster',
];
const root = join(__dirname, '..');

interface SummaryRow {
  scenario: string;
  figure: string;
  value: string;
  target: string;
  engine: string;
}

function rowsOf(scenario: string): SummaryRow[] {
  const file = join(root, 'bench', 'results', `${scenario}.json`);
  if (!existsSync(file)) return [{ scenario, figure: '(no result file)', value: '', target: '', engine: '' }];
  const json = JSON.parse(readFileSync(file, 'utf8'));
  const engine = String(json.engine ?? '');
  if (Array.isArray(json.summary)) {
    return json.summary.map((r: any) => ({
      scenario,
      figure: String(r.figure),
      value: `${typeof r.value === 'number' ? Math.round(r.value * 100) / 100 : r.value}${r.unit ? ' ' + r.unit : ''}`,
      target: r.target === undefined ? '' : String(r.target),
      engine,
    }));
  }
  return Object.entries(json)
    .filter(([, v]) => typeof v === 'number')
    .map(([k, v]) => ({ scenario, figure: k, value: String(v), target: '', engine }));
}

function printTable(rows: SummaryRow[]): void {
  const cols: (keyof SummaryRow)[] = ['scenario', 'figure', 'value', 'target', 'engine'];
  const width = cols.map((c) => Math.max(c.length, ...rows.map((r) => r[c].length)));
  const line = (cells: string[]) => cells.map((c, i) => c.padEnd(width[i])).join(' | ');
  console.log(line(cols));
  console.log(width.map((w) => '-'.repeat(w)).join('-|-'));
  for (const r of rows) console.log(line(cols.map((c) => r[c])));
}

function scriptOf(scenario: string): string | undefined {
  return [join(root, 'bench', `${scenario}.ts`), join(root, 'bench', scenario, 'index.ts')].find((f) =>
    existsSync(f),
  );
}

function main(): void {
  const asked = process.argv.slice(2);
  const withOptions = asked.slice(1).some((a) => a.startsWith('--'));
  const scenarios = withOptions ? [asked[0]] : asked.length ? asked : ORDER.filter((s) => scriptOf(s));
  const options = withOptions ? asked.slice(1) : [];
  const failed: string[] = [];
  for (const s of scenarios) {
    const script = scriptOf(s);
    if (!script) {
      console.error(`unknown scenario "${s}" (known: ${[...ORDER, 'peer', 'soak'].join(', ')})`);
      process.exit(2);
    }
    console.log(`\n=== bench: ${s} ===`);
    const r = spawnSync(
      process.execPath,
      ['-r', 'ts-node/register/transpile-only', '-r', 'tsconfig-paths/register', script, ...options],
      { cwd: root, stdio: 'inherit', env: { ...process.env, TS_NODE_TRANSPILE_ONLY: 'true' } },
    );
    if (r.status !== 0) failed.push(s);
  }
  const rows = scenarios.flatMap(rowsOf);
  console.log('\n=== summary ===');
  printTable(rows);
  writeFileSync(
    join(root, 'bench', 'results', 'summary.json'),
    JSON.stringify({ at: new Date().toISOString(), rows }, null, 2),
  );
  if (failed.length) {
    console.error(`failed scenarios: ${failed.join(', ')}`);
    process.exit(1);
  }
}

main();
