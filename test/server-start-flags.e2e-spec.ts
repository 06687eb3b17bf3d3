import { randomBytes } from 'crypto';
import { mkdtempSync, readFileSync, rmSync } from 'fs';
import { tmpdir } from 'os';
import { join } from 'path';
import { buildIfNeeded, ServerProcess, startScriptFlags } from '@app/testing/server-process';

/**
 * The server runs with the node flags of `npm start` wherever it runs: the container image's
 * command and the tests' and benchmarks' server processes take the same ones (a young generation
 * of 64 MB semi-spaces: docs/storage.md "The young generation").
 */
describe('the server process: npm start flags everywhere (e2e)', () => {
  const root = join(__dirname, '..');

  it('npm start runs dist/src/main.js with its node flags', () => {
    expect(startScriptFlags(root)).toEqual(['--max-semi-space-size=64']);
  });

  it("the container image's command is npm start's node, flags and script", () => {
    const dockerfile = readFileSync(join(root, 'Dockerfile'), 'utf8');
    const cmd = /^CMD (\[.*\])\s*$/m.exec(dockerfile);
    expect(cmd).not.toBeNull();
    expect(JSON.parse(cmd![1])).toEqual(['node', ...startScriptFlags(root), 'dist/src/main.js']);
  });

  it('a server process of the tests and benchmarks runs with those flags, its definitions loaded', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'fhir-flags-'));
    const server = new ServerProcess({
      MONGO_URL: process.env.TEST_MONGO_URL!,
      MONGO_DB: `flags_${randomBytes(4).toString('hex')}`,
      DATA_DIR: dataDir,
      DIRECTORY_SEED: 'false',
      // few log lines: the start-up line below stays within the output the process object keeps
      LOG_LEVEL: 'warn',
    });
    try {
      buildIfNeeded();
      await server.start();
      const cmdline = readFileSync(`/proc/${server.child!.pid}/cmdline`, 'utf8').split('\0');
      expect(cmdline.slice(1, -1)).toEqual(expect.arrayContaining(startScriptFlags(root)));
      expect((await fetch(`${server.url}/health`)).status).toBe(200);
      // every version's definitions were loaded at start, not by the first requests of each
      for (let i = 0; i < 50 && !server.output.includes('FHIR definitions loaded'); i++) {
        await new Promise((done) => setTimeout(done, 100));
      }
      expect(server.output).toMatch(/FHIR definitions loaded in r4 \d+, stu3 \d+, dstu2 \d+ ms/);
    } finally {
      await server.stop();
      rmSync(dataDir, { recursive: true, force: true });
    }
  }, 120_000);
});
