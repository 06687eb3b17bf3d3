import { spawnSync } from 'child_process';
import { chmodSync, existsSync, mkdtempSync, rmSync, statSync } from 'fs';
import { tmpdir } from 'os';
import { join } from 'path';
import { buildIfNeeded, runCli, ServerProcess } from '@app/testing';
import { embeddedEnv, processesUnder, START_MS, until } from './embedded-engine-helpers';

/**
 * `npm start` with no MONGO_URL: the app starts DocumentDB under DATA_DIR,
 * keeps its data across restarts, leaves no process behind after Ctrl-C or a SIGKILL, and repairs a
 * first start that was cut off half way. Runs the built server as a child process.
 */
describe('embedded DocumentDB lifecycle (fault)', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'fhir-embedded-'));
  const env = embeddedEnv(dataDir);

  beforeAll(() => {
    chmodSync(dataDir, 0o755);
    buildIfNeeded();
  });
  afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

  it('initialises on first start, logs the engine, keeps data, and stops every child on SIGINT', async () => {
    const server = new ServerProcess(env, START_MS);
    await server.start();
    expect(server.output).toMatch(
      /database engine: documentdb \(DocumentDB [\d.-]+ (\(extended RUM\) )?on PostgreSQL 15/,
    );
    const password = join(dataDir, 'documentdb', 'password');
    expect(statSync(password).mode & 0o777).toBe(0o600);
    expect(processesUnder(dataDir).length).toBeGreaterThanOrEqual(2);
    await server.stop('SIGINT');
    expect(await until(() => processesUnder(dataDir).length === 0, 15_000)).toBe(true);

    // The data survives: a client created through the CLI (its own start and stop) is listed later.
    const created = runCli(['client', 'create', '--name', 'persisted'], env);
    expect(created.status).toBe(0);
    const listed = runCli(['client', 'list'], env);
    expect(listed.stdout).toContain(created.json.client_id);
    expect(processesUnder(dataDir)).toEqual([]);
  }, 400_000);

  it('takes the database down with an app killed by SIGKILL, and starts again on the same data', async () => {
    const server = new ServerProcess(env, START_MS);
    await server.start();
    await server.kill9();
    expect(await until(() => processesUnder(dataDir).length === 0, 15_000)).toBe(true);
    const again = new ServerProcess(env, START_MS);
    await again.start();
    const health = await fetch(`${again.url}/health`);
    expect(health.status).toBe(200);
    await again.stop('SIGTERM');
    expect(await until(() => processesUnder(dataDir).length === 0, 15_000)).toBe(true);
  }, 400_000);

  it('repairs a first start cut off half way instead of serving a half-initialised store', async () => {
    const freshDir = mkdtempSync(join(tmpdir(), 'fhir-embedded-cut-'));
    chmodSync(freshDir, 0o755);
    const cutEnv = { ...env, DATA_DIR: freshDir };
    try {
      const first = new ServerProcess(cutEnv, START_MS);
      const starting = first.start().catch(() => undefined);
      // Cut it off once the cluster folder exists but before initialisation is complete.
      const pgVersion = join(freshDir, 'documentdb', 'pg', 'PG_VERSION');
      await until(() => existsSync(pgVersion), 60_000);
      await first.kill9();
      await starting;
      expect(existsSync(join(freshDir, 'documentdb', 'initialized'))).toBe(false);
      await until(() => processesUnder(freshDir).length === 0, 15_000);

      const second = new ServerProcess(cutEnv, START_MS);
      await second.start();
      expect((await fetch(`${second.url}/health`)).status).toBe(200);
      expect(existsSync(join(freshDir, 'documentdb', 'initialized'))).toBe(true);
      await second.stop('SIGINT');
      expect(await until(() => processesUnder(freshDir).length === 0, 15_000)).toBe(true);
    } finally {
      rmSync(freshDir, { recursive: true, force: true });
    }
  }, 400_000);

  it('exits non-zero naming each engine tried when none can start', () => {
    const res = spawnSync(process.execPath, [join(__dirname, '..', '..', 'dist', 'src', 'main.js')], {
      env: {
        ...process.env,
        ...env,
        DOCUMENTDB_PG_BIN_DIR: '/nonexistent/pg/bin',
        MONGOMS_SYSTEM_BINARY: '',
        // the download allowed: the kit beside the project is what makes the start skip it
        MONGOMS_DISABLE_DOWNLOAD: '',
      },
      encoding: 'utf8',
      timeout: 60_000,
    });
    expect(res.status).toBe(3);
    expect(res.stderr).toContain('No database available');
    expect(res.stderr).toMatch(/local mongod: not found/);
    expect(res.stderr).toMatch(/DocumentDB: not installed \(missing \/nonexistent\/pg\/bin\/postgres/);
    // beside the team's kit no download is waited for, and the one install command is named
    expect(res.stderr).toMatch(
      /mongodb-memory-server download: not tried \(the DocumentDB kit is beside the project/,
    );
    expect(res.stderr).toContain('bash ../shared/engines/documentdb-next/install.sh');
  });
});
