import { ChildProcess, spawn } from 'child_process';
import { randomBytes } from 'crypto';
import { existsSync } from 'fs';
import { mongo } from 'mongoose';
import { stopChild } from '../../src/database/child-processes';
import { freePort } from '../../src/database/free-port';

/**
 * The DocumentDB distributed kit's cluster (../shared/engines/documentdb-distributed: PostgreSQL +
 * Citus, one coordinator, N workers, one MongoDB-wire gateway), started for a test run under a
 * folder of its own on a free port, and stopped at its end.
 */
export const CLUSTER_SCRIPT =
  process.env.DOCDB_CLUSTER_SCRIPT ?? '/opt/documentdb/bin/docdb-start-cluster.sh';

export interface RunningCluster {
  uri: string;
  port: number;
  /** The cluster's data folder (coordinator, workers, logs). */
  dir: string;
  stop(): Promise<void>;
}

/** Why the kit cannot run here, or undefined when its start script is installed. */
export function missingCluster(): string | undefined {
  return existsSync(CLUSTER_SCRIPT)
    ? undefined
    : `${CLUSTER_SCRIPT} not found: install the kit with bash ../shared/engines/documentdb-distributed/install-distributed.sh`;
}

const URL_LINE = /^MONGODB_URL=(\S+)/m;

/**
 * Starts the cluster in `dir` (it must be reachable by the `postgres` OS user when run as root).
 * The Mongo user gets a random password: a `hello` that another program happens to answer on the
 * chosen port (the port is only free when it is picked) fails to authenticate, so the run never
 * talks to someone else's database. A start that loses its port is retried on another one.
 */
export async function startCluster(
  dir: string,
  options: { workers?: number; timeoutMs?: number; attempts?: number } = {},
): Promise<RunningCluster> {
  const missing = missingCluster();
  if (missing) throw new Error(missing);
  const password = randomBytes(12).toString('hex');
  const attempts = options.attempts ?? 3;
  const failures: string[] = [];
  for (let attempt = 1; attempt <= attempts; attempt++) {
    const port = await freePort();
    const started = await startOnce(dir, port, password, options.workers ?? 2, options.timeoutMs ?? 240_000);
    if (typeof started !== 'string') return started;
    failures.push(`port ${port}: ${started}`);
  }
  throw new Error(`the cluster did not start in ${dir}:\n${failures.join('\n')}`);
}

async function startOnce(
  dir: string,
  port: number,
  password: string,
  workers: number,
  timeoutMs: number,
): Promise<RunningCluster | string> {
  const child = spawn(CLUSTER_SCRIPT, [dir, String(port), String(workers)], {
    env: { ...process.env, DOCDB_USER: 'fhir', DOCDB_PASSWORD: password },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<string>((resolve) =>
    child.once('exit', (code, signal) => resolve(`exited (${signal ?? code})`)),
  );
  const stop = () => stopChild(child, 'SIGTERM', 30_000);
  const deadline = Date.now() + timeoutMs;
  let printed: string | undefined;
  while (!printed) {
    const outcome = await Promise.race([exited, sleep(200).then(() => undefined)]);
    if (outcome) return `${outcome}: ${tail(output)}`;
    if (Date.now() > deadline) {
      await stop();
      return `no MONGODB_URL within ${timeoutMs} ms: ${tail(output)}`;
    }
    printed = URL_LINE.exec(output)?.[1];
  }
  const uri = printed;
  const reason = await ourGateway(uri, child);
  if (reason) {
    await stop();
    return reason;
  }
  return { uri, port, dir, stop };
}

/** The gateway answering on the port is this cluster's: our password works and our script still runs. */
async function ourGateway(uri: string, child: ChildProcess): Promise<string | undefined> {
  const client = new mongo.MongoClient(uri, { serverSelectionTimeoutMS: 10_000 });
  try {
    await client.db('admin').command({ ping: 1 });
  } catch (e) {
    return `the gateway on this port is not ours: ${(e as Error).message}`;
  } finally {
    await client.close();
  }
  await sleep(300);
  return child.exitCode !== null || child.signalCode !== null ? 'the start script exited' : undefined;
}

function tail(text: string): string {
  return text.trim().split('\n').slice(-5).join(' | ');
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
