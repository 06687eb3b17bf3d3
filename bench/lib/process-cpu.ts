import { readdirSync, readFileSync } from 'node:fs';

/** Clock ticks per second of /proc/<pid>/stat times (USER_HZ: 100 on Linux). */
const TICKS_PER_SECOND = 100;

function statFields(pid: number): string[] | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // the command name (field 2) may hold spaces: fields are counted after its closing parenthesis
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  } catch {
    return undefined; // the process ended
  }
}

/** Every live descendant of `root` (children, their children …), from /proc. */
export function descendantPids(root: number): number[] {
  const parentOf = new Map<number, number>();
  for (const entry of readdirSync('/proc')) {
    const pid = Number(entry);
    if (!Number.isInteger(pid)) continue;
    const fields = statFields(pid);
    if (fields) parentOf.set(pid, Number(fields[1]));
  }
  const found: number[] = [];
  let frontier = [root];
  while (frontier.length > 0) {
    const next = [...parentOf].filter(([, parent]) => frontier.includes(parent)).map(([pid]) => pid);
    found.push(...next);
    frontier = next;
  }
  return found;
}

/**
 * CPU milliseconds (user + system) used so far by the processes this one started (an embedded
 * engine: PostgreSQL backends and the gateway). On a shared machine this, not wall time, is what
 * an operation costs the engine. Processes that ended count through the live descendant that
 * waited for them (PostgreSQL's postmaster reaps its backends): without them the sum went down
 * when a backend ended, and a phase's engine CPU came out negative.
 */
export function childrenCpuMs(root = process.pid): number {
  let ticks = 0;
  for (const pid of descendantPids(root)) {
    const fields = statFields(pid);
    // utime, stime, cutime, cstime are fields 14–17 of /proc/<pid>/stat (index 11–14 after the name)
    if (fields) ticks += Number(fields[11]) + Number(fields[12]) + Number(fields[13]) + Number(fields[14]);
  }
  return (ticks / TICKS_PER_SECOND) * 1000;
}
