import { ChildProcess, spawn } from 'child_process';
import { join } from 'path';
import { freePort } from './free-port';

export interface UpstreamClient {
  client_id: string;
  client_secret: string;
  redirect_uris: string[];
}

export interface UpstreamProvider {
  issuer: string;
  port: number;
  stop(): Promise<void>;
}

/** How long the provider's process may take to listen on a loaded machine. */
const START_TIMEOUT_MS = 60_000;

/**
 * Starts test/smart/fixtures/oidc-provider.mjs (the real `oidc-provider`; ESM, so a Node process
 * of its own) on a free port, or on `port` (a restart at the same issuer). Resolves once it listens.
 */
export async function startUpstreamProvider(opts: {
  clients: UpstreamClient[];
  accounts: Record<string, Record<string, unknown>>;
  port?: number;
}): Promise<UpstreamProvider> {
  const port = opts.port ?? (await freePort());
  const child = spawn(process.execPath, [join(__dirname, '..', 'fixtures', 'oidc-provider.mjs')], {
    env: {
      ...process.env,
      OIDC_FIXTURE: JSON.stringify({ port, clients: opts.clients, accounts: opts.accounts }),
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const issuer = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`oidc-provider did not start: ${stderr}`)),
      START_TIMEOUT_MS,
    );
    let out = '';
    child.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      const ready = /ready (\S+)/.exec(out);
      if (ready) {
        clearTimeout(timer);
        resolve(ready[1]);
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`oidc-provider exited with ${code}: ${stderr}`));
    });
  });
  return { issuer, port, stop: () => stopProcess(child) };
}

async function stopProcess(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  await new Promise<void>((resolve) => {
    child.once('exit', () => resolve());
    child.kill('SIGTERM');
  });
}
