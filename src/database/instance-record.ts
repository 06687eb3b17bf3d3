import { createHash } from 'crypto';
import { readFileSync } from 'fs';
import { basename } from 'path';

/**
 * What the process that started the embedded DocumentDB of a data folder records about it
 * (`DATA_DIR/documentdb/instance.json`, and sent to every process that connects to its lock):
 * enough for another process to find it, and to tell a live instance from a stale one.
 * No secret: the gateway's password stays in its own 0600 file.
 */
export interface InstanceRecord {
  /** The process that started the instance and will stop it (it holds the lock). */
  ownerPid: number;
  /** `server` (npm start: supervises it) or `tool` (CLI, tests, benches: for its own run). */
  ownerRole: InstanceRole;
  /** `starting` until the gateway answers; `restarting` while the owner restarts a child. */
  state: 'starting' | 'running' | 'restarting';
  startedAt: string;
  /** The data folder (`DATA_DIR/documentdb`, absolute). */
  folder: string;
  /** The gateway's TCP port on 127.0.0.1 (0 while starting). */
  port: number;
  postgresPid: number;
  gatewayPid: number;
  /** Engine and version, for the boot log of an attached process. */
  version: string;
}

export type InstanceRole = 'server' | 'tool';

const STATES = new Set(['starting', 'running', 'restarting']);
const ROLES = new Set(['server', 'tool']);

const isPid = (v: unknown): v is number => Number.isInteger(v) && (v as number) >= 0;

/** The record in `text`, or why it is not one (a torn write, another program's file, a bad edit). */
export function parseInstanceRecord(text: string): InstanceRecord | string {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return 'not JSON';
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return 'not an object';
  const r = value as Record<string, unknown>;
  const problems: string[] = [];
  if (!isPid(r.ownerPid) || r.ownerPid === 0) problems.push('ownerPid');
  if (!ROLES.has(r.ownerRole as string)) problems.push('ownerRole');
  if (!STATES.has(r.state as string)) problems.push('state');
  if (typeof r.startedAt !== 'string' || Number.isNaN(Date.parse(r.startedAt))) problems.push('startedAt');
  if (typeof r.folder !== 'string' || !r.folder.startsWith('/')) problems.push('folder');
  if (!Number.isInteger(r.port) || (r.port as number) < 0 || (r.port as number) > 65535)
    problems.push('port');
  if (!isPid(r.postgresPid)) problems.push('postgresPid');
  if (!isPid(r.gatewayPid)) problems.push('gatewayPid');
  if (typeof r.version !== 'string') problems.push('version');
  if (problems.length > 0) return `bad ${problems.join(', ')}`;
  return value as InstanceRecord;
}

/**
 * Whether a process command line (`/proc/<pid>/cmdline`, NUL-separated) runs `program` on this data
 * folder: the executable's name is `program` and an argument lies inside `folder`. A pid alone is
 * not enough: after a reboot or a long time it may belong to another program, or to the same
 * program serving another data folder.
 */
export function commandRuns(cmdline: string, program: string, folder: string): boolean {
  const args = cmdline.split('\0').filter(Boolean);
  if (args.length === 0 || basename(args[0]) !== program) return false;
  const inside = folder.endsWith('/') ? folder : `${folder}/`;
  return args.slice(1).some((a) => a === folder || a.startsWith(inside) || a.includes(`=${inside}`));
}

/** Whether `pid` now runs `program` on `folder` (Linux /proc). */
export function processRuns(pid: number, program: string, folder: string): boolean {
  if (!isPid(pid) || pid <= 1) return false;
  try {
    return commandRuns(readFileSync(`/proc/${pid}/cmdline`, 'utf8'), program, folder);
  } catch {
    return false; // gone (or not Linux)
  }
}

/**
 * Why the record's processes are not a usable instance, or undefined when both run the expected
 * program on the record's folder. `runs` is injectable for tests.
 */
export function deadProcesses(
  record: InstanceRecord,
  runs: (pid: number, program: string, folder: string) => boolean = processRuns,
): string | undefined {
  const dead: string[] = [];
  if (!runs(record.postgresPid, 'postgres', record.folder)) dead.push(`postgres (pid ${record.postgresPid})`);
  if (!runs(record.gatewayPid, 'documentdb_gateway', record.folder)) {
    dead.push(`gateway (pid ${record.gatewayPid})`);
  }
  return dead.length > 0 ? `${dead.join(' and ')} not running on ${record.folder}` : undefined;
}

/**
 * The name of the lock of a data folder: a Linux abstract Unix socket (no file; the kernel frees it
 * when the holder dies, however it dies, so a lock is never stale).
 */
export function lockAddress(realFolder: string): string {
  return `\0fhir-data-service-documentdb-${createHash('sha256').update(realFolder).digest('hex').slice(0, 32)}`;
}
