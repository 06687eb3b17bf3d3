import { execFile, spawnSync } from 'child_process';
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'fs';
import { tmpdir } from 'os';
import { join } from 'path';
import { promisify } from 'util';
import { buildIfNeeded, ServerProcess } from '@app/testing';
import { serverSelectionTimeoutMs } from '../../src/database/database-liveness';
import { documentDbPaths } from '../../src/database/documentdb-process';
import { embeddedEnv, processesUnder, START_MS, until, withChildren } from './embedded-engine-helpers';
import { parseEngineSettings } from '../../src/config/settings';

const root = join(__dirname, '..', '..');

/** The CLI in its own process, without blocking this one (the server is polled meanwhile). */
async function cli(args: string[], env: NodeJS.ProcessEnv): Promise<{ json: any; stderr: string }> {
  const { stdout, stderr } = await promisify(execFile)(
    process.execPath,
    [join(root, 'dist', 'src', 'cli', 'cli.js'), ...args],
    { cwd: root, env: { ...process.env, ...env }, encoding: 'utf8' },
  );
  return { json: JSON.parse(stdout), stderr };
}

/**
 * The README's path on the embedded default (no MONGO_URL), as a new user runs it: `npm start`
 * (the built server in its own process), the CLI in a second terminal on the same DATA_DIR while
 * the server serves, a user, a FHIR create and read; then the database's processes misbehave
 * (postgres paused, the gateway killed) and the server says so and recovers; Ctrl-C leaves nothing.
 */
describe('one embedded database per data folder, shared by the server and the CLI (fault)', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'fhir-shared-'));
  const folder = join(dataDir, 'documentdb');
  // Generous deadlines: this test is about the database being there, not about a loaded test
  // machine answering in time (/health's deadline is DB_TIMEOUT_MS / 4).
  const DB_TIMEOUT_MS = 12_000;
  const env = { ...embeddedEnv(dataDir), DB_TIMEOUT_MS: String(DB_TIMEOUT_MS) };
  const server = new ServerProcess(env, START_MS);
  const record = () => JSON.parse(readFileSync(join(folder, 'instance.json'), 'utf8'));
  let stopped: number[] = [];
  let afterStop = async () => undefined as unknown;

  beforeAll(() => {
    chmodSync(dataDir, 0o755);
    buildIfNeeded();
  });
  afterAll(async () => {
    await afterStop();
    for (const pid of stopped) process.kill(pid, 'SIGCONT');
    await server.stop('SIGINT');
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('serves the README path, survives its database processes misbehaving, and leaves nothing behind', async () => {
    await server.start();
    const started = record();
    expect(started).toMatchObject({ ownerPid: server.child!.pid, ownerRole: 'server', state: 'running' });

    // Every answer the server gives while the CLI runs, by status.
    const statuses: number[] = [];
    let polling = true;
    let extraPath = '';
    const headers: Record<string, string> = {};
    const poller = (async () => {
      while (polling) {
        for (const path of ['/health', extraPath].filter(Boolean)) {
          const res = await fetch(`${server.url}${path}`, {
            headers: path === '/health' ? {} : headers,
          }).catch(() => undefined);
          statuses.push(res?.status ?? 0);
        }
        await new Promise((r) => setTimeout(r, 50));
      }
    })();

    const stopPolling = () => ((polling = false), poller);
    afterStop = stopPolling;
    const created = await cli(['client', 'create', '--name', 'My app', '--customer', 'acme'], env);
    expect(created.json).toMatchObject({ name: 'My app', customer: 'acme' });
    expect(created.stderr).toContain(`attached to the running instance of pid ${server.child!.pid}`);
    const { client_id, client_secret } = created.json;

    const user = await fetch(`${server.url}/user-management/v1/user`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ client_id, client_secret, app_user_id: 'readme-user' }),
    });
    expect(user.status).toBe(200);
    headers.authorization = `Bearer ${((await user.json()) as { access_token: string }).access_token}`;
    const patient = await fetch(`${server.url}/r4/Patient`, {
      method: 'POST',
      headers: { ...headers, 'content-type': 'application/fhir+json' },
      body: JSON.stringify({ resourceType: 'Patient', gender: 'female' }),
    });
    expect(patient.status).toBe(201);
    const { id } = (await patient.json()) as { id: string };
    extraPath = `/r4/Patient/${id}`;

    // More CLI runs while reads go on: the server keeps its database.
    const listed = await cli(['client', 'list'], env);
    expect(listed.json.map((c: { client_id: string }) => c.client_id)).toContain(client_id);
    await cli(['client', 'create', '--name', 'second'], env);
    await stopPolling();
    expect(statuses.length).toBeGreaterThan(0);
    expect(statuses.filter((s) => s !== 200)).toEqual([]);
    expect(record()).toMatchObject({ gatewayPid: started.gatewayPid, postgresPid: started.postgresPid });

    // A second `npm start` on the folder is refused, naming the server that runs it.
    const second = spawnSync(process.execPath, [join(root, 'dist', 'src', 'main.js')], {
      cwd: root,
      env: { ...process.env, ...env },
      encoding: 'utf8',
      timeout: 60_000,
    });
    expect(second.status).toBe(4);
    expect(second.stderr).toContain(`DATA_DIR is in use`);
    expect(second.stderr).toContain(`pid ${server.child!.pid}`);

    // PostgreSQL paused (the gateway still answers ping): /health says 503 within its deadline.
    stopped = withChildren(started.postgresPid);
    for (const pid of stopped) process.kill(pid, 'SIGSTOP');
    await new Promise((r) => setTimeout(r, 1100)); // past the health cache
    const paused = await fetch(`${server.url}/health`, {
      signal: AbortSignal.timeout(serverSelectionTimeoutMs(DB_TIMEOUT_MS) + 3000),
    });
    expect({ status: paused.status, retryAfter: paused.headers.get('retry-after') }).toEqual({
      status: 503,
      retryAfter: expect.any(String),
    });
    // Its log line names the underlying error (the driver's time-out), not just the status.
    const logged =
      /"path":"\/health"\},"res":\{"statusCode":503\},"err":\{"type":"OperationOutcomeError","detail":"database: down","cause":\{"type":"Mongo\w+Error","detail":"[^"]+"/;
    // (the line is written once the answer has gone out)
    expect(await until(() => logged.test(server.output), 10_000)).toBe(true);
    for (const pid of stopped) process.kill(pid, 'SIGCONT');
    stopped = [];
    expect(await until(async () => (await fetch(`${server.url}/health`)).status === 200, 30_000)).toBe(true);

    // The gateway killed: the server starts it again and serves within 30 s.
    process.kill(started.gatewayPid, 'SIGKILL');
    const read = () => fetch(`${server.url}${extraPath}`, { headers }).then((r) => r.status);
    expect(await until(async () => (await read()) === 200, 30_000)).toBe(true);
    expect(server.output).toMatch(/gateway exited unexpectedly \(killed by SIGKILL\)/);
    expect(server.output).toMatch(/restarting gateway in \d+ ms \(attempt 1 of \d+\)/);
    // the record names the new gateway once the restart is complete, which may be just after the
    // gateway answers its first request
    expect(await until(() => /restarted \(attempt 1\); serving again/.test(server.output), 15_000)).toBe(
      true,
    );
    expect(record().gatewayPid).not.toBe(started.gatewayPid);

    // Ctrl-C: no process left under the data folder, no record.
    await server.stop('SIGINT');
    expect(await until(() => processesUnder(dataDir).length === 0, 15_000)).toBe(true);
    expect(existsSync(join(folder, 'instance.json'))).toBe(false);
  }, 400_000);

  it('exits non-zero naming the cause when its database cannot be started again', async () => {
    // A gateway that starts only while the flag file exists (exec: the process is the gateway).
    const flag = join(dataDir, 'gateway-allowed');
    const wrapper = join(dataDir, 'gateway.sh');
    writeFileSync(
      wrapper,
      `#!/bin/sh\n[ -e ${flag} ] || { echo "gateway refused by the test" >&2; exit 7; }\n` +
        `exec ${documentDbPaths(parseEngineSettings(process.env)).gatewayBin} "$@"\n`,
      { mode: 0o755 },
    );
    writeFileSync(flag, '');
    const failing = new ServerProcess({ ...env, DOCUMENTDB_GATEWAY_BIN: wrapper }, START_MS);
    await failing.start();
    rmSync(flag);
    process.kill(record().gatewayPid, 'SIGKILL');
    const exitCode = await new Promise<number | null>((resolve) => failing.child!.once('exit', resolve));
    expect(exitCode).toBe(1);
    expect(failing.output).toMatch(
      /restart attempt 5 failed: Error: documentdb gateway exited: .*gateway refused by the test/,
    );
    expect(failing.output).toMatch(
      /Stopping: the embedded database could not be restarted \(5 attempts\); last cause: .*gateway refused by the test/,
    );
    expect(await until(() => processesUnder(dataDir).length === 0, 15_000)).toBe(true);
  }, 200_000);
});
