import type { ServerProcess } from '../../test/support/server-process';
import {
  createBenchUsers,
  serveInOwnProcess,
  startBenchServer,
  type BenchServer,
  type BenchUser,
} from './bench-server';
import { descendantsNamed } from './process-stats';

/**
 * Our server as operators run it (`npm start`'s node and flags, in a process of its own) on an embedded
 * database of its own, with `clients` × `users` users made through the real routes of an
 * in-process app on the same database (which then stays idle: it issued the tokens).
 */
export interface OwnServer {
  url: string;
  engine: string;
  users: BenchUser[];
  bench: BenchServer;
  process: ServerProcess;
  serverPid: number;
  /** The embedded database's processes (PostgreSQL and the DocumentDB gateway), now. */
  databasePids(): number[];
  stop(): Promise<void>;
}

export async function startOwnServer(
  clients: number,
  usersPerClient: number,
  env: Record<string, string> = {},
  /** Another built checkout of the server to run (A/B benchmarks); this one by default. */
  checkout?: string,
): Promise<OwnServer> {
  const bench = await startBenchServer(env);
  try {
    const users = await createBenchUsers(bench, clients, usersPerClient);
    const child = await serveInOwnProcess(bench, env, checkout);
    return {
      url: child.url,
      engine: bench.engine,
      users,
      bench,
      process: child,
      serverPid: child.child!.pid!,
      // Below this process: the embedded engine (the server child is a node process).
      databasePids: () => descendantsNamed(process.pid, /^(postgres|postmaster|documentdb)/),
      stop: async () => {
        await child.stop();
        await bench.close();
      },
    };
  } catch (error) {
    await bench.close();
    throw error;
  }
}
