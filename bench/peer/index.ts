/**
 * The same scenarios against any FHIR R4 server, so anyone can compare ours with HAPI FHIR or
 * another server on one machine: ingest of N Synthea R4 patients as 20-entry PUT transactions
 * (resources/s), reads by id at 32 connections and typical searches and `$everything` at 8
 * (req/s, p50, p99). With several targets every measurement is interleaved: ingest in chunks that
 * alternate between the servers, then each scenario on one server and at once on the other, the
 * order swapped every time, so a change in the machine's load hits both alike.
 * CPU seconds per request of the named process trees (the server, its database) are read from /proc.
 *
 * Run: npm run bench -- peer --ours --base http://127.0.0.1:8080/fhir --name hapi --pid jvm=<pid>
 *      (see `--help`); writes bench/results/peer.json.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { join } from 'node:path';
import { httpJson, printTable } from '../lib/bench-server';
import { postPutTransaction } from '../lib/fhir-load';
import { runHttpLoad } from '../lib/http-load';
import { percentile } from '../lib/percentile';
import { cpuSeconds } from '../lib/process-stats';
import { peerData, peerScenarios, type Resource } from './scenarios';
import { parseArgs, type Target } from './targets';

interface Row {
  round: number;
  scenario: string;
  target: string;
  connections: number;
  'req/s': number;
  'p50 ms': number;
  'p99 ms': number;
  non2xx: number;
  errors: number;
  /** CPU milliseconds per request of each process group, e.g. `server 1.2 db 0.8`. */
  'cpu ms/req': string;
}

const fmtLoad = () =>
  loadavg()
    .map((l) => l.toFixed(2))
    .join(' ');

/** CPU seconds of each of the target's process groups; the difference of two readings is the cost. */
function cpuReading(target: Target): Record<string, number> {
  return Object.fromEntries(Object.entries(target.cpu()).map(([name, pids]) => [name, cpuSeconds(pids)]));
}

function cpuDelta(before: Record<string, number>, target: Target): Record<string, number> {
  const after = cpuReading(target);
  return Object.fromEntries(Object.keys(before).map((k) => [k, (after[k] ?? 0) - before[k]]));
}

/** 503s answered (and retried) per target during ingest: a busy machine, reported. */
const retried = new Map<string, number>();

async function postBundle(target: Target, resources: readonly Resource[]): Promise<number> {
  const res = await postPutTransaction(target.base, resources, target.headers);
  if (res.retries) retried.set(target.name, (retried.get(target.name) ?? 0) + res.retries);
  if (res.status !== 200)
    throw new Error(
      `${target.name}: transaction refused: ${res.status} ${JSON.stringify(res.body).slice(0, 400)}`,
    );
  const ok = (res.body.entry ?? []).filter((e: any) => /^20[01]/.test(String(e.response?.status))).length;
  if (ok !== resources.length)
    throw new Error(`${target.name}: ${resources.length - ok} of ${resources.length} entries not stored`);
  return ok;
}

interface IngestTotals {
  resources: number;
  seconds: number;
  cpu: Record<string, number>;
}

async function ingest(
  targets: Target[],
  batches: Resource[][],
  chunks: number,
  parallel: number,
): Promise<Map<string, IngestTotals>> {
  const totals = new Map<string, IngestTotals>(
    targets.map((t) => [t.name, { resources: 0, seconds: 0, cpu: {} }]),
  );
  const size = Math.ceil(batches.length / Math.max(1, chunks));
  for (let k = 0; k * size < batches.length; k++) {
    const chunk = batches.slice(k * size, (k + 1) * size);
    const order = k % 2 === 0 ? targets : [...targets].reverse();
    for (const target of order.filter((t) => !t.loaded)) {
      const before = cpuReading(target);
      const start = process.hrtime.bigint();
      let next = 0;
      let stored = 0;
      await Promise.all(
        Array.from({ length: parallel }, async () => {
          while (next < chunk.length) {
            const n = await postBundle(target, chunk[next++]);
            stored += n;
          }
        }),
      );
      const t = totals.get(target.name)!;
      t.seconds += Number(process.hrtime.bigint() - start) / 1e9;
      t.resources += stored;
      for (const [g, s] of Object.entries(cpuDelta(before, target))) t.cpu[g] = (t.cpu[g] ?? 0) + s;
      process.stderr.write(
        `ingest chunk ${k + 1}: ${target.name} ${stored} resources, ${(t.resources / t.seconds).toFixed(0)}/s so far\n`,
      );
    }
  }
  return totals;
}

async function measure(target: Target, paths: string[], connections: number, seconds: number) {
  const url = new URL(target.base);
  return runHttpLoad({
    origin: url.origin,
    paths: paths.map((p) => `${url.pathname}/${p}`),
    connections,
    seconds,
    headers: target.headers,
  });
}

/** One request of each scenario on each target: a server that refuses a query is said at once. */
async function preflight(targets: Target[], scenarios: ReturnType<typeof peerScenarios>): Promise<void> {
  for (const t of targets)
    for (const s of scenarios) {
      const res = await httpJson(t.base, 'GET', `/${s.paths[0]}`, undefined, {
        Accept: 'application/fhir+json',
        ...t.headers,
      });
      if (res.status !== 200)
        console.error(
          `warning: ${t.name} answers ${s.name} with ${res.status}: ${JSON.stringify(res.body).slice(0, 300)}`,
        );
    }
}

async function main(): Promise<void> {
  const options = await parseArgs(process.argv.slice(2));
  const { targets } = options;
  try {
    const data = peerData(options.patients);
    const all = data.batches.flat();
    const patients = all.filter((r) => r.resourceType === 'Patient').length;
    const loadAtStart = loadavg();
    console.error(
      `${patients} patients, ${data.resources} resources (${data.refused} Synthea defects left out); ` +
        `targets ${targets.map((t) => `${t.name} ${t.base}`).join(', ')}; load average ${fmtLoad()}`,
    );
    const ingestTotals = await ingest(targets, data.batches, options.ingestChunks, options.ingestParallel);
    const scenarios = peerScenarios(all).filter(
      (s) => !options.only || options.only.split(',').some((part) => s.name.includes(part)),
    );
    await preflight(targets, scenarios);
    const rows: Row[] = [];
    for (let round = 1; round <= options.rounds; round++)
      for (const [i, s] of scenarios.entries()) {
        const order = (round + i) % 2 === 0 ? targets : [...targets].reverse();
        for (const target of order) {
          if (options.warmup > 0) await measure(target, s.paths, s.connections, options.warmup);
          const before = cpuReading(target);
          const r = await measure(target, s.paths, s.connections, options.seconds);
          const cpu = cpuDelta(before, target);
          const row: Row = {
            round,
            scenario: s.name,
            target: target.name,
            connections: s.connections,
            'req/s': Math.round(r.perSecond),
            'p50 ms': r.p50,
            'p99 ms': r.p99,
            non2xx: r.non2xx,
            errors: r.errors,
            'cpu ms/req': Object.entries(cpu)
              .map(([g, sec]) => `${g} ${r.requests ? ((sec * 1000) / r.requests).toFixed(2) : '-'}`)
              .join(' '),
          };
          rows.push(row);
          process.stderr.write(
            `round ${round} ${s.name} ${target.name}: ${row['req/s']} req/s, p99 ${r.p99} ms (load ${fmtLoad()})\n`,
          );
        }
      }
    const summary = summarise(
      targets,
      scenarios.map((s) => s.name),
      rows,
    );
    const ingestRows = targets
      .filter((t) => !t.loaded)
      .map((t) => {
        const x = ingestTotals.get(t.name)!;
        return {
          target: t.name,
          resources: x.resources,
          seconds: Math.round(x.seconds * 10) / 10,
          'resources/s': Math.round(x.resources / x.seconds),
          'retried 503': retried.get(t.name) ?? 0,
          'cpu s': Object.entries(x.cpu)
            .map(([g, s]) => `${g} ${s.toFixed(1)}`)
            .join(' '),
        };
      });
    console.log(
      `\npeer — ${patients} Synthea R4 patients (${data.resources} resources), ${cpus().length} cores, ` +
        `load average ${loadAtStart.map((l) => l.toFixed(2)).join(' ')} at start, ${fmtLoad()} at end`,
    );
    for (const t of targets) console.log(`  ${t.name}: ${t.base}${t.engine ? ` (${t.engine})` : ''}`);
    if (ingestRows.length) {
      console.log(
        `\ningest: 20-entry PUT transactions, ${options.ingestParallel} in flight, ${options.ingestChunks} interleaved chunks`,
      );
      printTable(ingestRows);
    }
    console.log(`\nall measurements (${options.seconds}s each after ${options.warmup}s warm-up):`);
    printTable(rows as unknown as Array<Record<string, string | number>>);
    console.log(`\nsummary (req/s min–max over rounds, median p50/p99):`);
    printTable(summary.table);
    mkdirSync(join(__dirname, '..', 'results'), { recursive: true });
    writeFileSync(
      join(__dirname, '..', 'results', 'peer.json'),
      JSON.stringify(
        {
          at: new Date().toISOString(),
          engine: targets.map((t) => `${t.name}: ${t.engine ?? t.base}`).join('; '),
          cores: cpus().length,
          loadAverageAtStart: loadAtStart,
          loadAverageAtEnd: loadavg(),
          patients,
          resources: data.resources,
          options: {
            ...options,
            targets: targets.map((t) => ({ name: t.name, base: t.base, engine: t.engine })),
          },
          ingest: ingestRows,
          rows,
          table: summary.table,
          summary: summary.figures,
        },
        null,
        2,
      ),
    );
  } finally {
    for (const t of targets) await t.stop();
  }
}

function summarise(targets: Target[], scenarios: string[], rows: Row[]) {
  const table: Array<Record<string, string | number>> = [];
  const figures: Array<{ figure: string; value: number; unit?: string }> = [];
  for (const s of scenarios) {
    const line: Record<string, string | number> = { scenario: s };
    const medians: number[] = [];
    for (const t of targets) {
      const mine = rows.filter((r) => r.scenario === s && r.target === t.name);
      const rps = mine.map((r) => r['req/s']);
      line[`${t.name} req/s`] =
        Math.min(...rps) === Math.max(...rps) ? `${rps[0]}` : `${Math.min(...rps)}–${Math.max(...rps)}`;
      line[`${t.name} p50/p99 ms`] = `${percentile(
        mine.map((r) => r['p50 ms']),
        50,
      )}/${percentile(
        mine.map((r) => r['p99 ms']),
        50,
      )}`;
      // CPU per request of all the target's process groups together: less distorted by other load
      // on the machine than req/s.
      const cpu = mine.map((r) =>
        r['cpu ms/req']
          .split(' ')
          .filter((_, i) => i % 2 === 1)
          .reduce((n, v) => n + Number(v), 0),
      );
      if (cpu.some((c) => c > 0)) line[`${t.name} cpu ms/req`] = percentile(cpu, 50).toFixed(2);
      medians.push(percentile(rps, 50));
      figures.push({ figure: `${s} ${t.name}`, value: percentile(rps, 50), unit: 'req/s' });
    }
    if (targets.length === 2)
      line[`${targets[0].name}/${targets[1].name}`] = (medians[0] / medians[1]).toFixed(2);
    table.push(line);
  }
  return { table, figures };
}

main().catch((error) => {
  console.error(error instanceof Error ? error.message : error);
  process.exit(1);
});
