import { ChildProcess } from 'child_process';
import { existsSync, readFileSync } from 'fs';
import { processRuns } from './instance-record';

/**
 * An app killed with SIGKILL cannot stop its database children. The next start in the same folder
 * stops what a pid file names, but only if that pid still runs the expected program on this data
 * folder (a reused pid may belong to anything, or to the same program serving another folder).
 */
export function stopStaleProcess(
  pidFile: string,
  program: string,
  folder: string,
  signal: NodeJS.Signals,
): void {
  if (!existsSync(pidFile)) return;
  stopStalePid(Number(readFileSync(pidFile, 'utf8').split('\n')[0].trim()), program, folder, signal);
}

/** Stops `pid` (and waits for its exit) if it runs `program` on `folder`. */
export function stopStalePid(pid: number, program: string, folder: string, signal: NodeJS.Signals): void {
  if (!processRuns(pid, program, folder)) return;
  try {
    process.kill(pid, signal);
  } catch {
    return; // gone meanwhile
  }
  // Waits for the exit: PostgreSQL's SIGQUIT also ends its backends, which hold the shared memory.
  const deadline = Date.now() + 10_000;
  while (Date.now() < deadline) {
    try {
      process.kill(pid, 0);
    } catch {
      return;
    }
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 50);
  }
}

/** Sends `signal`, then SIGKILL if the child has not exited within `graceMs`. */
export function stopChild(child: ChildProcess, signal: NodeJS.Signals, graceMs: number): Promise<void> {
  return new Promise<void>((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve();
    const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
    child.once('exit', () => {
      clearTimeout(timer);
      resolve();
    });
    child.kill(signal);
  });
}
