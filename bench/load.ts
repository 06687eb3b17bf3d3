/**
 * Load test: the real server in its own process, 200 concurrent connections of mixed
 * reads, searches, creates and 20-entry bundle posts for 60 s (LOAD_SECONDS, LOAD_CONNECTIONS),
 * spread over LOAD_TENANTS (20) client applications with one user and one Synthea patient each.
 * Reports errors (429 counted apart), p50/p99 per request kind, and the server's RSS over time.
 */
import autocannon from 'autocannon';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'fs';
import { tmpdir } from 'os';
import { join } from 'path';
import { resolveDatabase } from '../src/database/embedded-database';
import { buildIfNeeded, runCli, ServerProcess } from '../test/support/server-process';
import { httpJson, printTable } from './lib/bench-server';
import { percentile } from './lib/percentile';
import { loadSyntheaResources } from '../test/support/synthea-data';

const SECONDS = Number(process.env.LOAD_SECONDS ?? 60);
const CONNECTIONS = Number(process.env.LOAD_CONNECTIONS ?? 200);
const TENANTS = Number(process.env.LOAD_TENANTS ?? 20);
const TUNABLE = [
  'SERVER_MAX_CONCURRENT_READS',
  'SERVER_MAX_CONCURRENT_WRITES',
  'SERVER_QUEUE_WAIT_MS',
  'DB_TIMEOUT_MS',
];
/** Diagnostics of the first few answers that were neither 2xx nor 429 (printed: what the errors were). */
const errorSamples: string[] = [];
function sampleError(status: number, body: string): void {
  if (status >= 300 && status !== 429 && errorSamples.length < 5)
    errorSamples.push(`${status} ${body.slice(0, 300)}`);
}

interface Tenant {
  headers: Record<string, string>;
}

/** Answers of one request kind: count per status, every latency and the 2xx ones (ms). */
interface KindTally {
  statuses: Record<number, number>;
  all: number[];
  ok: number[];
}

function rssMb(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0) / 1024;
}

async function main(): Promise<void> {
  buildIfNeeded();
  const dir = mkdtempSync(join(tmpdir(), 'fhir-load-'));
  const database = await resolveDatabase(process.env.MONGO_URL, join(dir, 'db'));
  const env = {
    MONGO_URL: database.uri,
    MONGO_DB: `load_${Date.now()}`,
    DATA_DIR: join(dir, 'data'),
    LOG_LEVEL: 'error',
    USER_MGMT_RATE_LIMIT: '10000000',
    DIRECTORY_SEED: 'false',
    // admission settings may be varied from the environment to compare (e.g. SERVER_QUEUE_WAIT_MS=250)
    ...Object.fromEntries(
      TUNABLE.filter((k) => process.env[k] !== undefined).map((k) => [k, process.env[k]!]),
    ),
  };
  const server = new ServerProcess(env);
  try {
    await server.start();
    // Many tenants, as a shared deployment sees them: each connection belongs to one app user, and
    // no client runs more connections than its concurrent-request limit (CLIENT_MAX_CONCURRENT_REQUESTS).
    const seed = loadSyntheaResources('r4', 1);
    const tenants: Tenant[] = [];
    for (let i = 0; i < TENANTS; i += 1) {
      const client = runCli(['client', 'create', '--name', `load-${i}`], env).json;
      const user = await httpJson(server.url, 'POST', '/user-management/v1/user', {
        app_user_id: `load-user-${i}`,
        client_id: client.client_id,
        client_secret: client.client_secret,
      });
      const auth = {
        Authorization: `Bearer ${user.body.access_token}`,
        'Content-Type': 'application/fhir+json',
      };
      // seed: one Synthea patient per tenant, so that reads and searches hit real documents
      for (let j = 0; j < seed.length; j += 20) {
        const entry = seed.slice(j, j + 20).map((r) => ({
          resource: r,
          request: { method: 'PUT', url: `${String(r.resourceType)}/${String(r.id)}` },
        }));
        const res = await httpJson(
          server.url,
          'POST',
          '/r4',
          { resourceType: 'Bundle', type: 'transaction', entry },
          auth,
        );
        if (res.status !== 200) throw new Error(`seed bundle: ${res.status} ${JSON.stringify(res.body)}`);
      }
      tenants.push({ headers: auth });
      process.stderr.write(`\rseeded tenant ${i + 1}/${TENANTS}`);
    }
    process.stderr.write('\n');
    const observations = seed.filter((r) => r.resourceType === 'Observation').map((r) => String(r.id));
    const patient = String(seed.find((r) => r.resourceType === 'Patient')!.id);
    const newPatient = JSON.stringify({
      resourceType: 'Patient',
      name: [{ family: 'Load', given: ['Test'] }],
      gender: 'other',
    });
    const bundle = JSON.stringify({
      resourceType: 'Bundle',
      type: 'transaction',
      entry: Array.from({ length: 20 }, (_, i) => ({
        fullUrl: `urn:uuid:00000000-0000-4000-8000-${String(i).padStart(12, '0')}`,
        resource:
          i === 0
            ? { resourceType: 'Patient', gender: 'female' }
            : {
                resourceType: 'Observation',
                status: 'final',
                code: { coding: [{ system: 'http://loinc.org', code: '8867-4' }] },
                subject: { reference: 'urn:uuid:00000000-0000-4000-8000-000000000000' },
                valueQuantity: { value: 60 + i, unit: '/min' },
              },
        request: { method: 'POST', url: i === 0 ? 'Patient' : 'Observation' },
      })),
    });
    const kinds = ['read', 'search', 'read', 'search', 'create', 'bundle'] as const;
    // each request carries its kind: autocannon answers a connection's requests in order, and its
    // `currentRequest` is still the answered one when the response event fires (pipelining 1)
    const requests = kinds.map((kind) => {
      switch (kind) {
        case 'read':
          return {
            kind,
            method: 'GET' as const,
            onResponse: sampleError,
            setupRequest: (r: any) => ({
              ...r,
              path: `/r4/Observation/${observations[Math.floor(Math.random() * observations.length)]}`,
            }),
          };
        case 'search':
          return {
            kind,
            method: 'GET' as const,
            onResponse: sampleError,
            path: `/r4/Observation?subject=Patient/${patient}&code=http://loinc.org|8867-4&_count=10`,
          };
        case 'create':
          return {
            kind,
            method: 'POST' as const,
            onResponse: sampleError,
            path: '/r4/Patient',
            body: newPatient,
          };
        case 'bundle':
          return { kind, method: 'POST' as const, onResponse: sampleError, path: '/r4', body: bundle };
      }
    });

    const pid = server.child!.pid!;
    const rss: number[] = [rssMb(pid)];
    const sampler = setInterval(() => rss.push(rssMb(pid)), 5000);
    const statuses = new Map<number, number>();
    const byKind = new Map<string, KindTally>(kinds.map((k) => [k, { statuses: {}, all: [], ok: [] }]));
    // One autocannon instance per tenant (its connections carry that tenant's token), aggregated
    // into one latency histogram.
    const perTenant = Math.max(1, Math.round(CONNECTIONS / TENANTS));
    const raw = await Promise.all(
      tenants.map(
        (tenant) =>
          new Promise<autocannon.Result>((resolve, reject) => {
            const instance = autocannon(
              {
                url: server.url,
                connections: perTenant,
                duration: SECONDS,
                headers: tenant.headers,
                requests,
                timeout: 30,
                skipAggregateResult: true,
              },
              (err, res) => (err ? reject(err) : resolve(res)),
            );
            instance.on('response', (client, status, _bytes, responseTime) => {
              statuses.set(status, (statuses.get(status) ?? 0) + 1);
              const kind = (client as unknown as { requestIterator: { currentRequest: { kind?: string } } })
                .requestIterator.currentRequest.kind;
              const tally = kind === undefined ? undefined : byKind.get(kind);
              if (!tally) return;
              tally.statuses[status] = (tally.statuses[status] ?? 0) + 1;
              tally.all.push(responseTime);
              if (status < 300) tally.ok.push(responseTime);
            });
          }),
      ),
    );
    // exported by autocannon 9 (lib/aggregateResult), missing from its type declarations
    const { aggregateResult } = autocannon as unknown as {
      aggregateResult(results: autocannon.Result[], opts: autocannon.Options): autocannon.Result;
    };
    const result = aggregateResult(raw, {
      url: server.url,
      connections: perTenant * TENANTS,
      duration: SECONDS,
    });
    clearInterval(sampler);
    rss.push(rssMb(pid));

    const count429 = statuses.get(429) ?? 0;
    const errors = [...statuses].filter(([s]) => s >= 400 && s !== 429).reduce((a, [, n]) => a + n, 0);
    const rows = [
      { figure: 'requests', value: result.requests.total },
      { figure: 'req/s (mean)', value: result.requests.total / SECONDS },
      { figure: 'latency p50 ms', value: result.latency.p50 },
      { figure: 'latency p99 ms', value: result.latency.p99 },
      { figure: 'errors (non-2xx, not 429)', value: errors + result.errors + result.timeouts },
      { figure: '429 responses', value: count429 },
      { figure: 'server RSS start MB', value: Math.round(rss[0]) },
      { figure: 'server RSS end MB', value: Math.round(rss[rss.length - 1]) },
      { figure: 'server RSS max MB', value: Math.round(Math.max(...rss)) },
    ];
    printTable(rows);
    const kindRows = [...byKind].map(([kind, t]) => ({
      kind,
      responses: t.all.length,
      '2xx': t.ok.length,
      throttled: t.statuses[429] ?? 0,
      other: t.all.length - t.ok.length - (t.statuses[429] ?? 0),
      'p50 ms': Math.round(percentile(t.all, 50)),
      'p99 ms': Math.round(percentile(t.all, 99)),
      '2xx p50 ms': Math.round(percentile(t.ok, 50)),
      '2xx p99 ms': Math.round(percentile(t.ok, 99)),
    }));
    printTable(kindRows);
    for (const sample of errorSamples) console.log(`error answer: ${sample}`);
    console.log(
      `statuses: ${JSON.stringify(Object.fromEntries(statuses))}; RSS samples (MB): ${rss.map((r) => Math.round(r)).join(' ')}`,
    );
    writeFileSync(
      join(__dirname, 'results', 'load.json'),
      JSON.stringify(
        {
          engine: database.description ?? database.engine,
          connections: CONNECTIONS,
          seconds: SECONDS,
          settings: Object.fromEntries(TUNABLE.map((k) => [k, env[k as keyof typeof env] ?? 'default'])),
          errorSamples,
          statuses: Object.fromEntries(statuses),
          byKind: kindRows,
          rssSamplesMb: rss,
          summary: [
            { figure: 'req/s (mixed)', value: result.requests.total / SECONDS, unit: 'req/s' },
            { figure: 'p50', value: result.latency.p50, unit: 'ms' },
            { figure: 'p99', value: result.latency.p99, unit: 'ms', target: '< 250' },
            { figure: 'errors', value: errors + result.errors, target: '0' },
            { figure: 'time-outs (30 s)', value: result.timeouts, target: '0' },
            { figure: 'RSS growth', value: rss[rss.length - 1] - rss[0], unit: 'MB', target: 'no trend' },
          ],
        },
        null,
        2,
      ),
    );
  } finally {
    await server.stop();
    await database.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
