/**
 * What a refused request costs the server: a client past its byte share
 * (CLIENT_RESPONSE_BYTES_PER_SECOND set low) that ignores Retry-After sends REFUSAL_REQUESTS reads
 * over REFUSAL_CONNECTIONS connections as fast as they are answered; the server's CPU time over
 * them (from /proc, user + system) per request. CPU time of the server process, not wall-clock
 * time, so the figure holds on a shared machine. REFUSAL_KIND=wrong-secrets: FHIR reads with the client
 * headers and wrong secrets from one address instead, measured once the failure throttle refuses them
 * (the verified ones before, with their scrypt runs, are not counted); REFUSAL_KIND=form-secrets: token
 * requests (client_credentials at a program realm) with wrong secrets in the form body, likewise;
 * REFUSAL_KIND=large-body: the byte-share caller posting 1 MB bodies to `$validate` (refused
 * before the body is parsed; Node still reads it off the connection); REFUSAL_KIND=anonymous-body: a
 * small Patient posted with no credentials at all (401 before the body is parsed). By default
 * (REFUSAL_KIND=all) the kinds run one after another on one server, reported side by side. Target: < 0.3 ms. Say the load (`uptime`) with a figure: the table prints it.
 * Prints a table, writes bench/results/refusal-cost.json.
 * Run: npm run bench -- refusal-cost   (MONGO_URL to use a running database)
 */
import http from 'node:http';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { resolveDatabase } from '../src/database/embedded-database';
import { buildIfNeeded, runCli, ServerProcess } from '../test/support/server-process';
import { httpJson, printTable } from './lib/bench-server';

const REQUESTS = Number(process.env.REFUSAL_REQUESTS ?? 3000);
const CONNECTIONS = Number(process.env.REFUSAL_CONNECTIONS ?? 8);
const KINDS = ['byte-share', 'wrong-secrets', 'form-secrets', 'large-body', 'anonymous-body'] as const;
type Kind = (typeof KINDS)[number];
const KIND = process.env.REFUSAL_KIND ?? 'all';
if (KIND !== 'all' && !(KINDS as readonly string[]).includes(KIND))
  throw new Error(`REFUSAL_KIND: all (default), ${KINDS.join(', ')}, not ${KIND}`);
const SELECTED: readonly Kind[] = KIND === 'all' ? KINDS : [KIND as Kind];
const FIGURES: Record<Kind, string> = {
  'byte-share': 'server CPU per refused request (ignoring Retry-After)',
  'wrong-secrets': 'server CPU per refused request (wrong client secrets in headers, throttled source)',
  'form-secrets': 'server CPU per refused request (wrong secrets in a token form body, throttled source)',
  'large-body': 'server CPU per refused request (a caller past its share posting 1 MB bodies)',
  'anonymous-body': 'server CPU per refused request (a 1 KB Patient posted without credentials: 401)',
};
/** The anonymous-body kind's body: a small Patient, encoded once. */
const SMALL_BODY = Buffer.from(
  JSON.stringify({ resourceType: 'Patient', name: [{ family: 'Anonymous'.repeat(100), given: ['A'] }] }),
);
/** The large-body kind's body: a legal ~1 MB narrative for `$validate`, encoded once. */
const LARGE_BODY = Buffer.from(
  JSON.stringify({
    resourceType: 'Patient',
    text: {
      status: 'generated',
      div: `<div xmlns="http://www.w3.org/1999/xhtml">${'<p>x</p>'.repeat(125_000)}</div>`,
    },
  }),
);
const EPA_TOKEN = '/auth/realms/epa-uat/protocol/openid-connect/token';

const agent = new http.Agent({ keepAlive: true, maxSockets: CONNECTIONS });

/**
 * The status of one request: a GET, or a POST of `form` (form-urlencoded, or a Buffer of the type
 * the headers say) when given. A connection the server closed while the body was still being sent
 * counts as status 0.
 */
function status(url: string, headers: Record<string, string>, form?: string | Buffer): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      url,
      {
        agent,
        method: form === undefined ? 'GET' : 'POST',
        headers:
          typeof form === 'string'
            ? { ...headers, 'Content-Type': 'application/x-www-form-urlencoded' }
            : headers,
      },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      },
    );
    req.on('error', (error: NodeJS.ErrnoException) =>
      error.code === 'EPIPE' || error.code === 'ECONNRESET' ? resolve(0) : reject(error),
    );
    req.end(form);
  });
}

function cpuSeconds(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

async function main(): Promise<void> {
  buildIfNeeded();
  const dir = mkdtempSync(join(tmpdir(), 'fhir-refusal-'));
  const database = await resolveDatabase(process.env.MONGO_URL, join(dir, 'db'));
  const env = {
    MONGO_URL: database.uri,
    MONGO_DB: `refusal_${Date.now()}`,
    DATA_DIR: join(dir, 'data'),
    LOG_LEVEL: 'info',
    USER_MGMT_RATE_LIMIT: '10000000',
    DIRECTORY_SEED: 'false',
    CLIENT_RESPONSE_BYTES_PER_SECOND: '1kb',
  };
  const server = new ServerProcess(env);
  try {
    const client = runCli(
      ['client', 'create', '--name', 'flood', '--programs', 'patient-access,epa'],
      env,
    ).json;
    await server.start();
    const user = await httpJson(server.url, 'POST', '/user-management/v1/user', {
      app_user_id: 'flood-0',
      client_id: client.client_id,
      client_secret: client.client_secret,
    });
    const token = String(user.body.access_token);
    const patient = { resourceType: 'Patient', id: 'flood', name: [{ family: 'F'.repeat(4000) }] };
    await httpJson(server.url, 'PUT', '/r4/Patient/flood', patient, { Authorization: `Bearer ${token}` });
    let guess = 0;
    const sender = (kind: Kind) => (): Promise<number> => {
      if (kind === 'form-secrets') {
        const form = new URLSearchParams({
          grant_type: 'client_credentials',
          client_id: client.client_id,
          client_secret: `wrong-${guess++}`,
        });
        return status(`${server.url}${EPA_TOKEN}`, {}, form.toString());
      }
      if (kind === 'anonymous-body')
        return status(`${server.url}/r4/Patient`, { 'Content-Type': 'application/fhir+json' }, SMALL_BODY);
      if (kind === 'large-body') {
        const headers = { Authorization: `Bearer ${token}`, 'Content-Type': 'application/fhir+json' };
        return status(`${server.url}/r4/Patient/$validate`, headers, LARGE_BODY);
      }
      return status(
        `${server.url}/r4/Patient/flood`,
        kind === 'wrong-secrets'
          ? { client_id: client.client_id, client_secret: `wrong-${guess++}`, 'x-app-user-id': 'flood-0' }
          : { Authorization: `Bearer ${token}` },
      );
    };
    const pid = server.child!.pid!;
    const rows = [];
    // each kind in turn on the one server, measured once its refusals have begun
    for (const kind of SELECTED) {
      const send = sender(kind);
      const refused = kind === 'anonymous-body' ? [401] : [429, 0];
      while (!refused.includes(await send()));
      const before = cpuSeconds(pid);
      const started = performance.now();
      const statuses = new Map<number, number>();
      let sent = 0;
      await Promise.all(
        Array.from({ length: CONNECTIONS }, async () => {
          while (sent++ < REQUESTS) {
            const s = await send();
            statuses.set(s, (statuses.get(s) ?? 0) + 1);
          }
        }),
      );
      const cpu = cpuSeconds(pid) - before;
      rows.push({
        kind,
        requests: REQUESTS,
        statuses: [...statuses.entries()].map(([s, n]) => `${s}×${n}`).join(' '),
        serverCpuS: cpu,
        cpuUsPerRequest: Math.round((cpu * 1e6) / REQUESTS),
        wallS: Math.round(performance.now() - started) / 1000,
        loadAverage: readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' '),
      });
    }
    printTable(rows);
    mkdirSync(join(__dirname, 'results'), { recursive: true });
    writeFileSync(
      join(__dirname, 'results', 'refusal-cost.json'),
      JSON.stringify(
        {
          engine: database.description ?? database.engine,
          rows,
          summary: rows.map((row) => ({
            figure: FIGURES[row.kind],
            value: row.cpuUsPerRequest,
            unit: 'µs',
            target: '< 300',
            loadAverage: row.loadAverage,
          })),
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
