import { ChildProcess } from 'child_process';
import { existsSync, readFileSync } from 'fs';

/**
 * An app killed with SIGKILL cannot stop its database children. The next start in the same folder
 * stops what a pid file names, but only if that pid still runs the expected program.
 */
export function stopStaleProcess(pidFile: string, program: string, signal: NodeJS.Signals): void {
  if (!existsSync(pidFile)) return;
  const pid = Number(readFileSync(pidFile, 'utf8').split('\n')[0].trim());
  if (!Number.isInteger(pid) || pid <= 1) return;
  try {
    const cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
    if (!cmdline.includes(program)) return;
    process.kill(pid, signal);
  } catch {
    return; // not running (or not Linux): nothing to stop
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
