/**
 * Tenant fairness (issue 16 item 3): does one tenant's heavy data and heavy queries move another
 * tenant's latency? A victim client searches its own small data set by name, first alone
 * (baseline), then while a heavy client stores large Patients (near MAX_RESOURCE_BYTES, up to
 * MAX_ARRAY_LENGTH names) and searches them from many concurrent connections (more than
 * CLIENT_MAX_CONCURRENT_REQUESTS: the excess is answered 429). Target: the victim's p99 moves by
 * at most 2×. Prints a table and writes bench/results/fairness.json.
 * Run: npm run bench -- fairness   (MONGO_URL to use a running database)
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createBenchUsers, httpJson, printTable, startBenchServer, type BenchUser } from './lib/bench-server';

const VICTIM_PATIENTS = 50;
const HEAVY_PATIENTS = Number(process.env.FAIRNESS_HEAVY_PATIENTS ?? 6);
const HEAVY_CONNECTIONS = Number(process.env.FAIRNESS_HEAVY_CONNECTIONS ?? 32);
const PHASE_MS = Number(process.env.FAIRNESS_PHASE_MS ?? 15_000);

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

/** A Patient of about `bytes` bytes: many names with long family strings (what the penetration test stored). */
function heavyPatient(i: number, bytes: number, names: number): Record<string, unknown> {
  const per = Math.floor(bytes / names) - 40;
  return {
    resourceType: 'Patient',
    name: Array.from({ length: names }, (_, k) => ({
      family: `Heavy${i}x${k}${'abcdefghij'.repeat(Math.max(1, Math.floor(per / 10)))}`,
      given: ['Load'],
    })),
  };
}

async function searchLoop(
  baseUrl: string,
  user: BenchUser,
  path: string,
  until: number,
  latencies: number[],
  statuses: Map<number, number>,
): Promise<void> {
  const headers = { Authorization: `Bearer ${user.accessToken}` };
  while (Date.now() < until) {
    const started = performance.now();
    const res = await httpJson(baseUrl, 'GET', path, undefined, headers);
    latencies.push(performance.now() - started);
    statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
    if (res.status === 429) await new Promise((r) => setTimeout(r, 50));
  }
}

async function main(): Promise<void> {
  // the fairness settings may be varied from the environment (e.g. CLIENT_MAX_CONCURRENT_REQUESTS=4)
  const server = await startBenchServer(
    Object.fromEntries(
      ['CLIENT_MAX_CONCURRENT_REQUESTS', 'DB_TIMEOUT_MS', 'MAX_RESOURCE_BYTES', 'MAX_ARRAY_LENGTH']
        .filter((key) => process.env[key])
        .map((key) => [key, process.env[key]!]),
    ),
  );
  try {
    const [victim, heavy] = await createBenchUsers(server, 2, 1);
    const auth = (u: BenchUser) => ({ Authorization: `Bearer ${u.accessToken}` });
    for (let i = 0; i < VICTIM_PATIENTS; i++) {
      const res = await httpJson(
        server.baseUrl,
        'POST',
        '/r4/Patient',
        { resourceType: 'Patient', name: [{ family: `Victim${i}`, given: ['Small'] }] },
        auth(victim),
      );
      if (res.status !== 201) throw new Error(`victim load: ${res.status} ${JSON.stringify(res.body)}`);
    }
    const heavyBytes = Math.floor(server.settings.maxResourceBytes * 0.9);
    const names = Math.min(server.settings.maxArrayLength, 1000);
    for (let i = 0; i < HEAVY_PATIENTS; i++) {
      const res = await httpJson(
        server.baseUrl,
        'POST',
        '/r4/Patient',
        heavyPatient(i, heavyBytes, names),
        auth(heavy),
      );
      if (res.status !== 201)
        throw new Error(`heavy load: ${res.status} ${JSON.stringify(res.body).slice(0, 300)}`);
    }
    process.stderr.write(
      `loaded ${VICTIM_PATIENTS} small and ${HEAVY_PATIENTS} heavy Patients (${heavyBytes} bytes, ${names} names each)\n`,
    );

    const victimPath = '/r4/Patient?name=Victim1';
    const heavyPath = '/r4/Patient?name=Heavy';
    // warm-up: caches, token verification, query plans
    await searchLoop(server.baseUrl, victim, victimPath, Date.now() + 1000, [], new Map());

    const baseline: number[] = [];
    const baselineStatus = new Map<number, number>();
    await searchLoop(server.baseUrl, victim, victimPath, Date.now() + PHASE_MS, baseline, baselineStatus);

    const contended: number[] = [];
    const contendedStatus = new Map<number, number>();
    const heavyLatencies: number[] = [];
    const heavyStatus = new Map<number, number>();
    const until = Date.now() + PHASE_MS;
    await Promise.all([
      searchLoop(server.baseUrl, victim, victimPath, until, contended, contendedStatus),
      ...Array.from({ length: HEAVY_CONNECTIONS }, () =>
        searchLoop(server.baseUrl, heavy, heavyPath, until, heavyLatencies, heavyStatus),
      ),
    ]);

    const row = (phase: string, lat: number[], statuses: Map<number, number>) => {
      const sorted = [...lat].sort((a, b) => a - b);
      return {
        phase,
        requests: lat.length,
        p50Ms: percentile(sorted, 50),
        p99Ms: percentile(sorted, 99),
        statuses: [...statuses.entries()].map(([s, n]) => `${s}×${n}`).join(' '),
      };
    };
    const rows = [
      row('victim alone', baseline, baselineStatus),
      row('victim while heavy tenant runs', contended, contendedStatus),
      row(`heavy tenant (${HEAVY_CONNECTIONS} connections)`, heavyLatencies, heavyStatus),
    ];
    printTable(rows);
    const ratio = rows[1].p99Ms / rows[0].p99Ms;
    console.log(`victim p99 ratio (contended / alone): ${ratio.toFixed(2)} (target ≤ 2)`);
    mkdirSync(join(__dirname, 'results'), { recursive: true });
    writeFileSync(
      join(__dirname, 'results', 'fairness.json'),
      JSON.stringify(
        {
          engine: server.engine,
          settings: {
            dbTimeoutMs: server.settings.dbTimeoutMs,
            clientMaxConcurrentRequests: server.settings.clientMaxConcurrentRequests,
            maxResourceBytes: server.settings.maxResourceBytes,
            maxArrayLength: server.settings.maxArrayLength,
          },
          heavyPatients: HEAVY_PATIENTS,
          heavyConnections: HEAVY_CONNECTIONS,
          phaseMs: PHASE_MS,
          rows,
          summary: [
            { figure: 'victim p99 ratio (heavy tenant running / alone)', value: ratio, target: '≤ 2' },
          ],
        },
        null,
        2,
      ),
    );
  } finally {
    await server.close();
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
