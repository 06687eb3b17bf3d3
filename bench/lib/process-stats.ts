import { readFileSync } from 'node:fs';
import { descendantPids } from './process-cpu';

/**
 * CPU time and memory of process trees read from /proc (Linux; the trees from process-cpu.ts): a benchmark on a shared machine
 * reports the CPU seconds a server and its database spent, which other engineers' load does not
 * inflate the way it inflates wall-clock throughput.
 * Fields: https://man7.org/linux/man-pages/man5/proc_pid_stat.5.html and
 * https://www.kernel.org/doc/html/latest/filesystems/proc.html (smaps_rollup).
 */
const TICKS_PER_SECOND = 100;

interface StatLine {
  comm: string;
  /** utime + stime + cutime + cstime, in clock ticks. */
  ticks: number;
}

function readStat(pid: number): StatLine | undefined {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // comm is in parentheses and may itself contain spaces or parentheses: split after the last ')'.
    const close = text.lastIndexOf(')');
    const f = text.slice(close + 2).split(' ');
    // f[0] is field 3 (state): utime..cstime are fields 14..17.
    return {
      comm: text.slice(text.indexOf('(') + 1, close),
      ticks: Number(f[11]) + Number(f[12]) + Number(f[13]) + Number(f[14]),
    };
  } catch {
    return undefined; // gone meanwhile
  }
}

/** `root` and every process below it. */
export function processTree(root: number): number[] {
  return [root, ...descendantPids(root)];
}

/** Processes below `root` whose command name matches (e.g. the embedded database's postgres). */
export function descendantsNamed(root: number, name: RegExp): number[] {
  return descendantPids(root).filter((pid) => name.test(readStat(pid)?.comm ?? ''));
}

/**
 * CPU seconds spent by the processes (and their reaped children: a PostgreSQL backend that ended
 * counts in its postmaster's cutime). Live processes only, so compare two readings of a stable set.
 */
export function cpuSeconds(pids: readonly number[]): number {
  let ticks = 0;
  for (const pid of pids) ticks += readStat(pid)?.ticks ?? 0;
  return ticks / TICKS_PER_SECOND;
}

/** CPU seconds of every process in the trees below `roots` at this moment. */
export function treeCpuSeconds(roots: readonly number[]): number {
  return cpuSeconds(roots.flatMap((r) => processTree(r)));
}

export interface Memory {
  /** Resident set size summed over the processes, MB (shared pages counted once per process). */
  rssMb: number;
  /** Proportional set size, MB: shared pages divided among the processes that map them. */
  pssMb: number;
  /**
   * The anonymous part of the PSS, MB: the processes' private memory (for PostgreSQL, what its
   * backends allocate for themselves).
   */
  anonMb: number;
  /**
   * The shared-memory part of the PSS, MB (for PostgreSQL, mostly the pages of shared_buffers the
   * processes have touched: a cache whose size the configuration fixes).
   */
  shmemMb: number;
  processes: number;
}

/** RSS and PSS summed over processes, from /proc/<pid>/smaps_rollup. */
export function memoryOf(pids: readonly number[]): Memory {
  let rssKb = 0;
  let pssKb = 0;
  let anonKb = 0;
  let shmemKb = 0;
  let processes = 0;
  for (const pid of pids) {
    let text: string;
    try {
      text = readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8');
    } catch {
      continue;
    }
    processes++;
    rssKb += Number(/^Rss:\s+(\d+)/m.exec(text)?.[1] ?? 0);
    pssKb += Number(/^Pss:\s+(\d+)/m.exec(text)?.[1] ?? 0);
    anonKb += Number(/^Pss_Anon:\s+(\d+)/m.exec(text)?.[1] ?? 0);
    shmemKb += Number(/^Pss_Shmem:\s+(\d+)/m.exec(text)?.[1] ?? 0);
  }
  return {
    rssMb: rssKb / 1024,
    pssMb: pssKb / 1024,
    anonMb: anonKb / 1024,
    shmemMb: shmemKb / 1024,
    processes,
  };
}

/** Established TCP connections to a local port (client sides), from /proc/net/tcp and tcp6. */
export function tcpConnectionsTo(port: number): number {
  const hexPort = port.toString(16).toUpperCase().padStart(4, '0');
  let n = 0;
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let text = '';
    try {
      text = readFileSync(table, 'utf8');
    } catch {
      continue;
    }
    for (const line of text.split('\n').slice(1)) {
      const f = line.trim().split(/\s+/);
      // f[2] is the remote address:port, f[3] the state (01 = ESTABLISHED)
      if (f.length > 3 && f[3] === '01' && f[2].endsWith(`:${hexPort}`)) n++;
    }
  }
  return n;
}

/** Seconds since boot at which a process started (field 22 of /proc/<pid>/stat), or undefined. */
function startedAtSeconds(pid: number): number | undefined {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return Number(text.slice(text.lastIndexOf(')') + 2).split(' ')[19]) / TICKS_PER_SECOND;
  } catch {
    return undefined;
  }
}

function uptimeSeconds(): number {
  return Number(readFileSync('/proc/uptime', 'utf8').split(' ')[0]);
}

/**
 * PostgreSQL backends serving a client connection among `pids` (their title names user and db):
 * how many, and the age in seconds of the oldest that serves another login than `postgres` (the
 * gateway's data connections; its few system connections and pg_cron's log in as `postgres`),
 * 0 when there is none.
 */
export function postgresBackends(pids: readonly number[]): { count: number; oldestSeconds: number } {
  let count = 0;
  let oldestStart = Infinity;
  for (const pid of pids) {
    try {
      const title = readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0/g, ' ');
      if (!/^postgres: \S+ \S+ (\[local\]|\d|\S+\(\d+\))/.test(title)) continue;
      count++;
      if (!title.startsWith('postgres: postgres '))
        oldestStart = Math.min(oldestStart, startedAtSeconds(pid) ?? Infinity);
    } catch {
      // gone meanwhile
    }
  }
  return {
    count,
    oldestSeconds: Number.isFinite(oldestStart) ? uptimeSeconds() - oldestStart : 0,
  };
}
