import { ChildProcess, execFileSync, spawn } from 'child_process';
import { readFileSync } from 'fs';
import { join } from 'path';
import { freePort } from '../../src/database/free-port';

const root = join(__dirname, '..', '..');

/** Builds dist/ when the sources are newer (the same script `npm start` uses). */
export function buildIfNeeded(): void {
  execFileSync(process.execPath, [join(root, 'scripts', 'build-if-needed.js')], {
    cwd: root,
    stdio: 'ignore',
  });
}

/** Runs the CLI (`node dist/src/cli/cli.js …`) and parses the JSON it prints on stdout. */
export function runCli(
  args: string[],
  env: NodeJS.ProcessEnv,
): { status: number; json: any; stdout: string } {
  try {
    const stdout = execFileSync(process.execPath, [join(root, 'dist', 'src', 'cli', 'cli.js'), ...args], {
      cwd: root,
      env: { ...process.env, ...env },
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    return { status: 0, json: safeJson(stdout), stdout };
  } catch (e) {
    const err = e as { status?: number; stdout?: string };
    return { status: err.status ?? 1, json: safeJson(err.stdout ?? ''), stdout: err.stdout ?? '' };
  }
}

function safeJson(text: string): any {
  try {
    return JSON.parse(text.trim());
  } catch {
    return undefined;
  }
}

/**
 * The node flags of a checkout's `npm start` (its package.json `start` script: `node <flags>
 * dist/src/main.js`): the server runs here as operators run it. Older checkouts without flags
 * give none.
 */
export function startScriptFlags(checkout = root): string[] {
  const pkg = JSON.parse(readFileSync(join(checkout, 'package.json'), 'utf8')) as {
    scripts?: { start?: string };
  };
  const words = (pkg.scripts?.start ?? '').split(/\s+/).filter(Boolean);
  const script = words.indexOf('dist/src/main.js');
  if (words[0] !== 'node' || script < 0)
    throw new Error(`${checkout}: npm start is not \`node … dist/src/main.js\``);
  return words.slice(1, script);
}

/** The real server as a child process (`npm start`'s node and flags), for crash and CLI tests. */
export class ServerProcess {
  child?: ChildProcess;
  port = 0;
  output = '';

  /**
   * `startTimeoutMs`: a first start that initialises an embedded database takes longer. `checkout`:
   * the built checkout whose `dist/src/main.js` runs (another build of the server, for A/B
   * benchmarks); this one by default.
   */
  constructor(
    private readonly env: NodeJS.ProcessEnv,
    private readonly startTimeoutMs = 30_000,
    private readonly checkout = root,
  ) {}

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  async start(): Promise<void> {
    this.port = this.port || (await freePort());
    // SERVER_NODE_ARGS (this server's env, else the process's): extra node flags for the server
    // only, after npm start's (a later one wins): `--cpu-prof` when profiling a benchmark, or
    // another young generation for a benchmark's row.
    const extra = this.env.SERVER_NODE_ARGS ?? process.env.SERVER_NODE_ARGS ?? '';
    const nodeArgs = [...startScriptFlags(this.checkout), ...extra.split(' ').filter(Boolean)];
    this.child = spawn(process.execPath, [...nodeArgs, join(this.checkout, 'dist', 'src', 'main.js')], {
      cwd: this.checkout,
      env: { ...process.env, ...this.env, PORT: String(this.port), HOST: '127.0.0.1' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const keep = (b: Buffer) => (this.output = (this.output + b.toString()).slice(-20000));
    this.child.stdout?.on('data', keep);
    this.child.stderr?.on('data', keep);
    const deadline = Date.now() + this.startTimeoutMs;
    while (Date.now() < deadline) {
      if (this.child.exitCode !== null) throw new Error(`server exited: ${this.output.slice(-2000)}`);
      const ok = await fetch(`${this.url}/health`)
        .then((r) => r.status === 200)
        .catch(() => false);
      if (ok) return;
      await new Promise((r) => setTimeout(r, 100));
    }
    throw new Error(`server did not become healthy: ${this.output.slice(-2000)}`);
  }

  /** SIGKILL: no shutdown hook runs, in-flight requests die mid-write. */
  async kill9(): Promise<void> {
    await this.stop('SIGKILL');
  }

  async stop(signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
    const child = this.child;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    await new Promise<void>((resolve) => {
      child.once('exit', () => resolve());
      child.kill(signal);
    });
  }
}
