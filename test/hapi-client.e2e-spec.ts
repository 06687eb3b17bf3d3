import { execFile, execFileSync } from 'child_process';
import { randomBytes } from 'crypto';
import { mkdtempSync, readFileSync, rmSync } from 'fs';
import { tmpdir } from 'os';
import { join } from 'path';
import { promisify } from 'util';
import { buildIfNeeded, runCli, ServerProcess } from '@app/testing';

const run = promisify(execFile);
const project = join(__dirname, 'clients', 'hapi');

/**
 * Compiles test/clients/hapi once per run: offline when the local Maven repository holds its
 * dependencies (.ci/run fetches them before `npm test`), otherwise online. Returns the classpath.
 */
function buildScenarios(): string {
  const goals = [
    '-q',
    '-B',
    'compile',
    'dependency:build-classpath',
    '-Dmdep.outputFile=target/classpath.txt',
  ];
  try {
    execFileSync('mvn', ['-o', ...goals], { cwd: project, stdio: 'pipe' });
  } catch {
    execFileSync('mvn', goals, { cwd: project, stdio: 'pipe' });
  }
  const dependencies = readFileSync(join(project, 'target', 'classpath.txt'), 'utf8').trim();
  return `${join(project, 'target', 'classes')}:${dependencies}`;
}

/**
 * The real HAPI FHIR generic client (Java, test/clients/hapi) against the built server in its own
 * process, in DSTU2, STU3 and R4: create, read, search, transaction, $validate (valid and invalid),
 * history since a time, capabilities. HAPI parses every answer with its strict parser.
 */
describe('HAPI FHIR generic client (e2e, real client over HTTP)', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'fhir-hapi-'));
  const env = {
    MONGO_URL: process.env.TEST_MONGO_URL!,
    MONGO_DB: `hapi_${randomBytes(4).toString('hex')}`,
    DATA_DIR: dataDir,
    DIRECTORY_SEED: 'false',
  };
  const server = new ServerProcess(env);
  /** `PASS|FAIL <version> <scenario>[: reason]` lines by `<version> <scenario>`. */
  const results = new Map<string, string>();

  beforeAll(async () => {
    const classpath = buildScenarios();
    buildIfNeeded();
    await server.start();
    const { client_id, client_secret } = runCli(['client', 'create', '--name', 'hapi client'], env).json;
    const user = await fetch(`${server.url}/user-management/v1/user`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ app_user_id: 'hapi-user', client_id, client_secret }),
    }).then((r) => r.json() as Promise<{ access_token: string }>);
    // UTC: HAPI writes `_since` with a `+00:00` offset, the form its users send
    const { stdout } = await run(
      'java',
      ['-Duser.timezone=UTC', '-cp', classpath, 'fhirserver.hapi.Scenarios', server.url, user.access_token],
      { timeout: 240_000, maxBuffer: 1 << 24 },
    );
    for (const line of stdout.split('\n')) {
      const match = /^(PASS|FAIL) (\S+ [\w-]+)/.exec(line);
      if (match) results.set(match[2], line);
    }
  }, 600_000);

  afterAll(async () => {
    await server.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  const scenarios = [
    'create',
    'read',
    'search',
    'transaction',
    'validate-valid',
    'validate-invalid',
    'capabilities',
  ];
  for (const version of ['dstu2', 'stu3', 'r4']) {
    it(`${version}: ${scenarios.join(', ')}`, () => {
      const outcome = scenarios.map(
        (name) => results.get(`${version} ${name}`) ?? `MISSING ${version} ${name}`,
      );
      expect(outcome).toEqual(scenarios.map((name) => `PASS ${version} ${name}`));
    });
  }

  // HAPI sends `_since=2026-01-01T00:00:00.000+00:00` with the `+` unescaped, which arrives as a
  // space: where a space can only be an offset's `+`, the server reads it as one.
  it.each(['dstu2', 'stu3', 'r4'])('%s: history().since() (`_since=…+00:00`, the + unescaped)', (version) => {
    expect(results.get(`${version} history-since`)).toBe(`PASS ${version} history-since`);
  });
});
