/**
 * Tenant fairness: does one tenant's heavy data and heavy queries move another
 * tenant's latency? A victim client searches its own small data set by name, first alone
 * (baseline), then while a heavy client stores large Patients (near MAX_RESOURCE_BYTES, up to
 * MAX_ARRAY_LENGTH names: heavier than the penetration test's three ~477 KB Patients) and attacks
 * from many concurrent connections (more than CLIENT_MAX_CONCURRENT_REQUESTS), one attack kind per
 * phase (FAIRNESS_ATTACKS, comma-separated; default all):
 * - `search`: searches of the large Patients, honouring Retry-After;
 * - `search-ignoring-retry-after`: the same, back 50 ms after a 429/503 whatever Retry-After says;
 * - `wrong-secrets`: client_credentials with wrong secrets at a token endpoint (failure throttle);
 * - `history`: `_history?_count=100` pages over versions of the large Patients, ignoring Retry-After;
 * - `fhirpath-pool`, `intra-client`, `wrong-secrets-headers`: see bench/fairness-pools.ts (an attack
 *   with its own victim operation measures that operation alone first);
 * - `everything-amplification`, `revinclude-fan-out`, `slow-small-queries`: the database's work
 *   (bench/lib/database-attacks.ts), honouring Retry-After;
 * - `narrative`: `$validate` of 32,000 nested elements (refused at the depth limit), ignoring Retry-After;
 * - `large-narrative`: `$validate` of a legal ~1 MB narrative (parsed in slices), ignoring Retry-After;
 * - `write-flood`: transactions of 20 Observations (database time of writes), honouring Retry-After.
 * Target: the victim's p99 moves by at most 2× in each, against the victim alone measured right
 * before that attack (the spread of those baselines against the first is printed: the bench's own
 * noise, no attack running). The attacker's requests (served, and
 * refused 429) and the server's CPU per attacker request are reported too, the victim's own CPU in
 * the phase taken out (for refused floods: target < 0.3 ms). Each phase starts with the attacker's
 * shares full (`settle`): storing what the attacks need, and the previous phase's attack, left it in
 * debt (up to 30 s), and a phase that began in debt measured the refusals of that debt, not what
 * its attack does.
 *
 * The server runs in its own process (`npm start`'s node and flags), so the bench's
 * own work (sending, receiving) never shares the server's event loop; the heavy tenant's answers
 * are read to the end but not parsed. The CPU time of the server process and of the embedded engine in each phase is reported
 * (from /proc). Prints a table and writes bench/results/fairness.json.
 * Run: npm run bench -- fairness   (MONGO_URL to use a running database; SERVER_NODE_ARGS to profile;
 * FAIRNESS_PHASE_MS=5000 for short phases; FAIRNESS_ATTACKS=a,b to pick attacks)
 */
import http from 'node:http';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { resolveDatabase } from '../src/database/embedded-database';
import { parseSettings } from '../src/config/settings';
import { buildIfNeeded, runCli, ServerProcess } from '../test/support/server-process';
import { httpJson, httpJsonPolitely, printTable } from './lib/bench-server';
import { percentile } from './lib/percentile';
import { childrenCpuMs } from './lib/process-cpu';
import { POOL_ATTACKS, poolAttacks, type PoolAttack } from './fairness-pools';
import {
  largeNarrativeRequest,
  narrativeAttackRequest,
  transactionFloodRequest,
} from './lib/narrative-attack';
import { DATABASE_ATTACKS, seedDatabaseAttacks, type DatabaseAttack } from './lib/database-attacks';
import { victimLoop, type VictimRequest } from './lib/victim-loop';

const VICTIM_PATIENTS = 50;
const HEAVY_PATIENTS = Number(process.env.FAIRNESS_HEAVY_PATIENTS ?? 6);
const HEAVY_CONNECTIONS = Number(process.env.FAIRNESS_HEAVY_CONNECTIONS ?? 32);
const PHASE_MS = Number(process.env.FAIRNESS_PHASE_MS ?? 15_000);
const ATTACKS = [
  'search',
  'search-ignoring-retry-after',
  'wrong-secrets',
  'history',
  'narrative',
  'large-narrative',
  'write-flood',
  ...POOL_ATTACKS,
  ...DATABASE_ATTACKS,
] as const;
type Attack = (typeof ATTACKS)[number];
const SELECTED = (process.env.FAIRNESS_ATTACKS?.split(',') ?? [...ATTACKS]) as Attack[];
/** Versions of each large Patient the history attack pages through. */
const HEAVY_VERSIONS = 3;
/** Settings of the server that may be varied from the environment (e.g. CLIENT_MAX_CONCURRENT_REQUESTS=4). */
const PASSED_SETTINGS = [
  'CLIENT_MAX_CONCURRENT_REQUESTS',
  'DB_TIMEOUT_MS',
  'MAX_RESOURCE_BYTES',
  'MAX_ARRAY_LENGTH',
  'SEARCH_PAGE_MAX_BYTES',
  'CLIENT_DATABASE_MS_PER_SECOND',
  'CLIENT_COSTLY_DATABASE_SHARE_PERCENT',
  'CLIENT_LOOP_MS_PER_SECOND',
];

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

const agent = new http.Agent({ keepAlive: true, maxSockets: HEAVY_CONNECTIONS + 8 });

type Answer = { status: number; bytes: number; retryAfter?: string };

/** A request read to the end without parsing (a heavy answer costs the bench as little as possible). */
function drain(
  url: string,
  headers: Record<string, string>,
  method: 'GET' | 'POST' | 'PATCH' = 'GET',
  body?: string | Buffer,
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { agent, headers, method }, (res) => {
      let bytes = 0;
      res.on('data', (c: Buffer) => (bytes += c.length));
      res.on('end', () =>
        resolve({ status: res.statusCode ?? 0, bytes, retryAfter: res.headers['retry-after'] }),
      );
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}

interface LoopStats {
  latencies: number[];
  statuses: Map<number, number>;
  bytes: number;
}

const newStats = (): LoopStats => ({ latencies: [], statuses: new Map(), bytes: 0 });

/**
 * Sends `send()` in a loop until `until`. After a 429/503 an HTTP client waits as Retry-After says
 * (RFC 9110 §10.2.3); a hostile one (`ignoreRetryAfter`) comes back after 50 ms.
 */
async function loop(
  send: () => Promise<Answer>,
  until: number,
  stats: LoopStats,
  ignoreRetryAfter = false,
): Promise<void> {
  while (Date.now() < until) {
    const started = performance.now();
    // a kept-alive socket the server closed while it was idle, or one it closed while a large body
    // was still being sent: an HTTP client sends again
    const closed = (error: NodeJS.ErrnoException) => error.code === 'ECONNRESET' || error.code === 'EPIPE';
    const res = await send()
      .catch((error: NodeJS.ErrnoException) => {
        if (!closed(error)) throw error;
        return send();
      })
      // closed again: counted as status 0 (an answer the client could not read)
      .catch((error: NodeJS.ErrnoException): Answer => {
        if (!closed(error)) throw error;
        return { status: 0, bytes: 0 };
      });
    stats.latencies.push(performance.now() - started);
    stats.statuses.set(res.status, (stats.statuses.get(res.status) ?? 0) + 1);
    stats.bytes += res.bytes;
    if (res.status === 429 || res.status === 503 || res.status === 0) {
      const waitMs = ignoreRetryAfter ? 50 : Number(res.retryAfter ?? 1) * 1000;
      await new Promise((r) => setTimeout(r, Math.max(0, Math.min(waitMs, until - Date.now()))));
    }
  }
}

/** CPU seconds (user + system) a process has used so far. */
function cpuSeconds(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

/**
 * CPU seconds used so far by the embedded engine (the bench's other descendants: PostgreSQL
 * backends, the gateway); 0 with MONGO_URL. Contention on the engine, not on the server's event
 * loop, is what a neighbour's heavy queries add.
 */
function engineCpuSeconds(serverPid: number): number {
  return childrenCpuMs() / 1000 - cpuSeconds(serverPid);
}

/**
 * Waits, as an HTTP client told Retry-After would, until a small read of the attacker is served
 * (its shares are out of debt; nobody else is active meanwhile, so the read costs it no work),
 * then one burst more (a share refills its one-second burst in a second): its shares are full.
 * Returns the seconds waited.
 */
async function settle(url: string, headers: Record<string, string>): Promise<number> {
  const started = Date.now();
  const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
  for (let tries = 0; tries < 120; tries++) {
    const res = await drain(`${url}/r4/Patient?_id=settle-probe`, headers);
    if (res.status !== 429 && res.status !== 503) {
      await sleep(1000);
      return (Date.now() - started) / 1000;
    }
    await sleep(Number(res.retryAfter ?? 1) * 1000);
  }
  throw new Error('settle: the attacker is still refused after 120 waits');
}

function loadAverage(): string {
  return readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');
}

async function main(): Promise<void> {
  buildIfNeeded();
  const dir = mkdtempSync(join(tmpdir(), 'fhir-fairness-'));
  const database = await resolveDatabase(process.env.MONGO_URL, join(dir, 'db'));
  const passed = Object.fromEntries(
    PASSED_SETTINGS.filter((key) => process.env[key]).map((key) => [key, process.env[key]!]),
  );
  const env = {
    MONGO_URL: database.uri,
    MONGO_DB: `fairness_${Date.now()}`,
    DATA_DIR: join(dir, 'data'),
    LOG_LEVEL: 'error',
    USER_MGMT_RATE_LIMIT: '10000000',
    DIRECTORY_SEED: 'false',
    ...passed,
  };
  const settings = parseSettings({ ...env, PORT: '0' });
  const server = new ServerProcess(env);
  try {
    const clients = ['victim', 'heavy'].map((name) => runCli(['client', 'create', '--name', name], env).json);
    await server.start();
    const tokens: string[] = [];
    for (const [i, client] of clients.entries()) {
      const res = await httpJson(server.url, 'POST', '/user-management/v1/user', {
        app_user_id: `fairness-${i}`,
        client_id: client.client_id,
        client_secret: client.client_secret,
      });
      if (res.status !== 200) throw new Error(`user creation: ${res.status} ${JSON.stringify(res.body)}`);
      tokens.push(String(res.body.access_token));
    }
    const [victimToken, heavyToken] = tokens;
    const auth = (token: string) => ({ Authorization: `Bearer ${token}` });
    for (let i = 0; i < VICTIM_PATIENTS; i++) {
      const res = await httpJson(
        server.url,
        'POST',
        '/r4/Patient',
        { resourceType: 'Patient', name: [{ family: `Victim${i}`, given: ['Small'] }] },
        auth(victimToken),
      );
      if (res.status !== 201) throw new Error(`victim load: ${res.status} ${JSON.stringify(res.body)}`);
    }
    const heavyBytes = Math.floor(settings.maxResourceBytes * 0.9);
    const names = Math.min(settings.maxArrayLength, 1000);
    for (let i = 0; i < HEAVY_PATIENTS; i++) {
      const res = await httpJsonPolitely(
        server.url,
        'POST',
        '/r4/Patient',
        heavyPatient(i, heavyBytes, names),
        auth(heavyToken),
      );
      if (res.status !== 201)
        throw new Error(`heavy load: ${res.status} ${JSON.stringify(res.body).slice(0, 300)}`);
    }
    if (SELECTED.includes('history')) {
      for (let i = 0; i < HEAVY_PATIENTS; i++) {
        for (let v = 1; v < HEAVY_VERSIONS; v++) {
          const patient = { ...heavyPatient(i, heavyBytes, names), id: `heavy-${i}` };
          const res = await httpJsonPolitely(
            server.url,
            'PUT',
            `/r4/Patient/heavy-${i}`,
            patient,
            auth(heavyToken),
          );
          if (res.status >= 300)
            throw new Error(`heavy versions: ${res.status} ${JSON.stringify(res.body).slice(0, 300)}`);
        }
      }
    }
    const databasePaths = await seedDatabaseAttacks(
      server.url,
      auth(heavyToken),
      settings.maxResourceBytes,
      SELECTED,
    );
    process.stderr.write(
      `loaded ${VICTIM_PATIENTS} small and ${HEAVY_PATIENTS} heavy Patients (${heavyBytes} bytes, ${names} names each)\n`,
    );

    const victimUrl = `${server.url}/r4/Patient?name=Victim1`;
    const heavyUrl = `${server.url}/r4/Patient?name=Heavy`;
    const historyUrl = `${server.url}/r4/Patient/_history?_count=100`;
    const tokenUrl = `${server.url}/auth/realms/epa-uat/protocol/openid-connect/token`;
    const heavyClient = clients[1] as { client_id: string };
    let guess = 0;
    const narrative = narrativeAttackRequest();
    const post = (request: ReturnType<typeof narrativeAttackRequest>) => {
      // encoded once: the bench's own work per attacker request stays small
      const body = Buffer.from(request.body);
      return () =>
        drain(
          `${server.url}${request.path}`,
          { ...auth(heavyToken), 'Content-Type': request.contentType },
          request.method,
          body,
        );
    };
    const databaseAttack = (attack: DatabaseAttack): PoolAttack => ({
      send: () => drain(`${server.url}${databasePaths[attack]}`, auth(heavyToken)),
      ignoreRetryAfter: false,
    });
    const attacks: Record<Attack, PoolAttack> = {
      ...(await poolAttacks({
        url: server.url,
        drain,
        victimToken,
        heavyToken,
        victimClient: clients[0] as { client_id: string; client_secret: string },
        heavyClient: clients[1] as { client_id: string; client_secret: string },
        heavyPatient: () => heavyPatient(99, heavyBytes, names),
      })),
      search: { send: () => drain(heavyUrl, auth(heavyToken)), ignoreRetryAfter: false },
      'search-ignoring-retry-after': {
        send: () => drain(heavyUrl, auth(heavyToken)),
        ignoreRetryAfter: true,
      },
      'wrong-secrets': {
        send: () =>
          drain(
            tokenUrl,
            { 'Content-Type': 'application/x-www-form-urlencoded' },
            'POST',
            new URLSearchParams({
              grant_type: 'client_credentials',
              client_id: heavyClient.client_id,
              client_secret: `wrong-${guess++}`,
            }).toString(),
          ),
        ignoreRetryAfter: true,
      },
      history: { send: () => drain(historyUrl, auth(heavyToken)), ignoreRetryAfter: true },
      narrative: { send: post(narrative), ignoreRetryAfter: true },
      'large-narrative': { send: post(largeNarrativeRequest()), ignoreRetryAfter: true },
      'write-flood': { send: post(transactionFloodRequest()), ignoreRetryAfter: false },
      'everything-amplification': databaseAttack('everything-amplification'),
      'revinclude-fan-out': databaseAttack('revinclude-fan-out'),
      'slow-small-queries': databaseAttack('slow-small-queries'),
    };
    // the victim runs in a worker thread: its latency is the server's, not the bench's own event
    // loop busy sending the attacker's requests
    const victim: VictimRequest = { url: victimUrl, method: 'GET', headers: auth(victimToken) };
    const pid = server.child!.pid!;
    // warm-up: caches, token verification, query plans
    await victimLoop(victim, Date.now() + 1000);
    await loop(attacks.search.send, Date.now() + 1000, newStats());

    const load: string[] = [loadAverage()];
    let cpu = cpuSeconds(pid);
    let engineCpu = engineCpuSeconds(pid);
    const baseline = await victimLoop(victim, Date.now() + PHASE_MS);
    const baselineCpu = cpuSeconds(pid) - cpu;
    const baselineEngineCpu = engineCpuSeconds(pid) - engineCpu;
    load.push(loadAverage());

    const row = (phase: string, stats: LoopStats, cpuS: number, engineCpuS: number) => {
      const sorted = [...stats.latencies].sort((a, b) => a - b);
      return {
        phase,
        requests: stats.latencies.length,
        p50Ms: percentile(sorted, 50),
        p99Ms: percentile(sorted, 99),
        statuses: [...stats.statuses.entries()].map(([s, n]) => `${s}×${n}`).join(' '),
        MB: Math.round(stats.bytes / 1e6),
        serverCpuS: cpuS,
        engineCpuS: Math.round(engineCpuS * 100) / 100,
      };
    };
    const rows = [row('victim alone', baseline, baselineCpu, baselineEngineCpu)];
    // each adjacent baseline's p99 over the first one's: what the bench reads with no attack at all
    const aloneAgain: number[] = [];
    const summary: Array<{
      attack: Attack;
      ratio: number;
      attackerRequests: number;
      served: number;
      refused: number;
      settledS: number;
      cpuMsPerAttack: number;
      loadAverage: string;
    }> = [];
    for (const attack of SELECTED) {
      const { send, ignoreRetryAfter, victim: ownVictim, attacker } = attacks[attack];
      const settledS = await settle(server.url, attacker ?? auth(heavyToken));
      // The victim alone again right before the attack, on the server as the previous phases left
      // it: the ratio compares two adjacent phases, so a machine that got busier or quieter since
      // the first baseline does not read as the attack's effect (or hide it). An attack with its
      // own victim operation measures that operation alone.
      let alone: ReturnType<typeof row>;
      if (ownVictim) {
        await victimLoop(ownVictim.request, Date.now() + 1000); // warm-up (a pool's workers boot)
        const aloneStats = await victimLoop(ownVictim.request, Date.now() + PHASE_MS / 3);
        alone = row(`victim ${ownVictim.name} alone`, aloneStats, 0, 0);
      } else {
        alone = row(`victim alone before ${attack}`, await victimLoop(victim, Date.now() + PHASE_MS), 0, 0);
        aloneAgain.push(alone.p99Ms / rows[0].p99Ms);
      }
      rows.push(alone);
      cpu = cpuSeconds(pid);
      engineCpu = engineCpuSeconds(pid);
      const heavy = newStats();
      const until = Date.now() + PHASE_MS;
      const [contended] = await Promise.all([
        victimLoop(ownVictim?.request ?? victim, until),
        ...Array.from({ length: HEAVY_CONNECTIONS }, () => loop(send, until, heavy, ignoreRetryAfter)),
      ]);
      const contendedCpu = cpuSeconds(pid) - cpu;
      const contendedEngineCpu = engineCpuSeconds(pid) - engineCpu;
      load.push(loadAverage());
      const victimRow = row(`victim during ${attack}`, contended, contendedCpu, contendedEngineCpu);
      rows.push(
        victimRow,
        row(`  ${attack} (${HEAVY_CONNECTIONS} connections)`, heavy, contendedCpu, contendedEngineCpu),
      );
      // The phase's server CPU less the victim's own (its requests at its CPU per request alone):
      // an attack honouring long Retry-After sends few requests, and the victim's CPU divided by
      // them read as a costly attacker request.
      const victimCpuS = contended.latencies.length * (baselineCpu / Math.max(1, baseline.latencies.length));
      const attackerRequests = heavy.latencies.length;
      summary.push({
        attack,
        ratio: victimRow.p99Ms / alone.p99Ms,
        attackerRequests,
        // answered, whatever the answer (a 422 too-costly FHIRPath ran until its timeout): not refused
        served: [...heavy.statuses].reduce(
          (n, [status, count]) => n + ([0, 429, 503].includes(status) ? 0 : count),
          0,
        ),
        refused: heavy.statuses.get(429) ?? 0,
        settledS,
        cpuMsPerAttack: (Math.max(0, contendedCpu - victimCpuS) * 1000) / Math.max(1, attackerRequests),
        loadAverage: loadAverage(),
      });
    }
    printTable(rows);
    for (const { attack, ratio, attackerRequests, served, refused, settledS, cpuMsPerAttack } of summary)
      console.log(
        `victim p99 ratio during ${attack} / alone: ${ratio.toFixed(2)} (target ≤ 2); attacker requests ${attackerRequests}: ${served} answered, ${refused} refused 429 (its shares full at the start: waited ${settledS.toFixed(1)} s); server CPU per attacker request (the victim's own CPU taken out) ${cpuMsPerAttack.toFixed(2)} ms`,
      );
    if (aloneAgain.length > 0)
      console.log(
        `noise: the victim alone before an attack / alone at the start, p99 ratio ${Math.min(...aloneAgain).toFixed(2)}–${Math.max(...aloneAgain).toFixed(2)} over ${aloneAgain.length} phases (no attack running)`,
      );
    console.log(`load average ${load.join(' → ')}`);
    mkdirSync(join(__dirname, 'results'), { recursive: true });
    writeFileSync(
      join(__dirname, 'results', 'fairness.json'),
      JSON.stringify(
        {
          engine: database.description ?? database.engine,
          settings: {
            dbTimeoutMs: settings.dbTimeoutMs,
            clientMaxConcurrentRequests: settings.clientMaxConcurrentRequests,
            maxResourceBytes: settings.maxResourceBytes,
            maxArrayLength: settings.maxArrayLength,
            ...passed,
          },
          heavyPatients: HEAVY_PATIENTS,
          heavyPatientBytes: heavyBytes,
          heavyConnections: HEAVY_CONNECTIONS,
          phaseMs: PHASE_MS,
          loadAverage: load,
          aloneAgainP99Ratios: aloneAgain,
          rows,
          summary: summary.map(
            ({
              attack,
              ratio,
              attackerRequests,
              served,
              refused,
              settledS,
              cpuMsPerAttack,
              loadAverage: la,
            }) => ({
              figure: `victim p99 ratio (${attack} / alone)`,
              value: ratio,
              target: '≤ 2',
              attackerRequests,
              attackerServed: served,
              attackerRefused: refused,
              settledSeconds: settledS,
              serverCpuMsPerAttackerRequest: cpuMsPerAttack,
              loadAverage: la,
            }),
          ),
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
