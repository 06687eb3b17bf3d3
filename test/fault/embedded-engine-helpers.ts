import { readdirSync, readFileSync } from 'fs';

/** First starts run initdb and CREATE EXTENSION: slow on a busy 2-core machine. */
export const START_MS = 150_000;

/** The server's settings for the embedded default (no MONGO_URL) on `dataDir`. */
export function embeddedEnv(dataDir: string): NodeJS.ProcessEnv {
  return {
    MONGO_URL: '',
    DATA_DIR: dataDir,
    LOG_LEVEL: 'info',
    DIRECTORY_SEED: 'false',
    MONGOMS_DISABLE_DOWNLOAD: '1',
  };
}

function pids(): string[] {
  return readdirSync('/proc').filter((e) => /^\d+$/.test(e));
}

/** Processes whose command line names `dir` (the embedded engine's postgres and gateway). */
export function processesUnder(dir: string): number[] {
  return pids()
    .filter((e) => {
      try {
        const cmdline = readFileSync(`/proc/${e}/cmdline`, 'utf8');
        return cmdline.includes(dir) && !cmdline.includes('jest');
      } catch {
        return false; // gone meanwhile
      }
    })
    .map(Number);
}

/** `pid` and every process whose parent it is (postgres: the postmaster and its backends). */
export function withChildren(pid: number): number[] {
  const children = pids()
    .filter((e) => {
      try {
        // the parent pid is the 2nd field after the parenthesised command
        return Number(readFileSync(`/proc/${e}/stat`, 'utf8').split(') ')[1].split(' ')[1]) === pid;
      } catch {
        return false;
      }
    })
    .map(Number);
  return [pid, ...children];
}

/** Polls `check` until it holds or `ms` has passed; its last answer. */
export async function until(check: () => boolean | Promise<boolean>, ms: number): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    if (await check()) return true;
    await new Promise((r) => setTimeout(r, 100));
  }
  return check();
}
