import { ChildProcess, execFileSync, spawn } from 'child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'fs';
import { createServer, Socket } from 'net';
import { join } from 'path';

/** Finds a usable FerretDB 1.x binary: FERRETDB_BIN, PATH, then $(go env GOPATH)/bin. */
export function findFerretDbBinary(env: NodeJS.ProcessEnv = process.env): string | undefined {
  const candidates: string[] = [];
  if (env.FERRETDB_BIN) candidates.push(env.FERRETDB_BIN);
  for (const dir of (env.PATH ?? '').split(':').filter(Boolean)) candidates.push(join(dir, 'ferretdb'));
  const gopath = env.GOPATH || goEnvGopath();
  if (gopath) candidates.push(join(gopath, 'bin', 'ferretdb'));
  candidates.push(join(env.HOME ?? '/root', 'go', 'bin', 'ferretdb'));
  return candidates.find((c) => existsSync(c));
}

function goEnvGopath(): string | undefined {
  try {
    return execFileSync('go', ['env', 'GOPATH'], { encoding: 'utf8', timeout: 5000 }).trim() || undefined;
  } catch {
    return undefined;
  }
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      const port = typeof addr === 'object' && addr ? addr.port : 0;
      srv.close(() => resolve(port));
    });
  });
}

async function waitForPort(port: number, child: ChildProcess, timeoutMs: number, output: () => string) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) {
      throw new Error(`ferretdb exited with code ${child.exitCode}: ${output().slice(-500)}`);
    }
    const open = await new Promise<boolean>((resolve) => {
      const s = new Socket();
      s.once('connect', () => {
        s.destroy();
        resolve(true);
      });
      s.once('error', () => resolve(false));
      s.connect(port, '127.0.0.1');
    });
    if (open) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`ferretdb did not listen on port ${port} within ${timeoutMs} ms`);
}

const PID_FILE = 'ferretdb.pid';

/**
 * An app killed with SIGKILL cannot stop its FerretDB child; the orphan keeps the SQLite files
 * open. The next start in the same folder stops it first (only if that pid is still a ferretdb).
 */
function stopStaleInstance(dataDir: string): void {
  const pidFile = join(dataDir, PID_FILE);
  if (!existsSync(pidFile)) return;
  const pid = Number(readFileSync(pidFile, 'utf8').trim());
  if (!Number.isInteger(pid) || pid <= 1) return;
  try {
    const cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
    if (cmdline.includes('ferretdb') && cmdline.includes(dataDir)) process.kill(pid, 'SIGKILL');
  } catch {
    // not running (or not Linux): nothing to stop
  }
}

export interface RunningFerretDb {
  uri: string;
  port: number;
  child: ChildProcess;
  stop(): Promise<void>;
}

/**
 * Starts FerretDB with its SQLite backend in `dataDir` (DESIGN.md §3): `--debug-addr=-` so that
 * several instances do not clash on 8088, `--state-dir` so that state.json stays in the data folder.
 */
export async function startFerretDb(
  binary: string,
  dataDir: string,
  port?: number,
): Promise<RunningFerretDb> {
  mkdirSync(dataDir, { recursive: true });
  stopStaleInstance(dataDir);
  const listenPort = port ?? (await freePort());
  const child = spawn(
    binary,
    [
      '--handler=sqlite',
      `--sqlite-url=file:${dataDir.endsWith('/') ? dataDir : dataDir + '/'}`,
      `--listen-addr=127.0.0.1:${listenPort}`,
      `--state-dir=${dataDir}`,
      '--debug-addr=-',
      '--telemetry=disable',
      '--log-level=error',
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  if (child.pid) writeFileSync(join(dataDir, PID_FILE), String(child.pid));
  let output = '';
  const keep = (b: Buffer) => {
    output = (output + b.toString()).slice(-4000);
  };
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  await waitForPort(listenPort, child, 20000, () => output);
  return {
    uri: `mongodb://127.0.0.1:${listenPort}/`,
    port: listenPort,
    child,
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null || child.signalCode !== null) return resolve();
        const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
        child.once('exit', () => {
          clearTimeout(timer);
          resolve();
        });
        child.kill('SIGTERM');
      }),
  };
}
