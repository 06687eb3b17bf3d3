import { existsSync, mkdirSync, readFileSync, realpathSync, renameSync, rmSync, writeFileSync } from 'fs';
import { join } from 'path';
import { stopStalePid } from './child-processes';
import { DocumentDbInstance, DocumentDbPaths, documentDbUri, gatewayAnswers } from './documentdb-process';
import { DocumentDbSupervisor, RestartPolicy } from './documentdb-supervisor';
import { IndexUpkeep, IndexUpkeepPolicy } from './index-upkeep';
import { connectToOwner, HeldLock } from './instance-lock';
import { deadProcesses, InstanceRecord, InstanceRole, parseInstanceRecord } from './instance-record';

/** The second `npm start` on a data folder whose database another server runs. */
export class DataDirInUseError extends Error {}

export interface OpenOptions {
  role: InstanceRole;
  /** The server's supervision: restarts, and what to do when they fail. */
  supervise?: { onGiveUp(error: Error): void; policy?: RestartPolicy };
  /** Rebuild the indexes of collections whose rows turned over (src/database/index-upkeep.ts). */
  indexUpkeep?: IndexUpkeepPolicy;
  report?: (message: string) => void;
  /** How long to wait for an instance that is starting or restarting, or held by a tool (server). */
  waitMs?: number;
}

export interface EmbeddedDocumentDb {
  uri: string;
  version: string;
  /** True when this process started the instance (and will stop it). */
  owned: boolean;
  ownerPid: number;
  stop(): Promise<void>;
}

const RECORD = 'instance.json';
/** An owner that is a tool waits this long at its end for processes still attached to it. */
const DRAIN_MS = 10 * 60_000;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * One embedded DocumentDB per data folder (docs/storage.md "Engines"). The first process takes the
 * folder's lock, starts the instance and records it; every later one attaches to it (its pids run
 * postgres and the gateway on this folder and its port answers) and never stops it:
 * - a tool (CLI, tests, benches) attaches to any live instance, waiting while one is starting or
 *   restarting; it starts one of its own when none runs, and on its end stops it once the tools
 *   attached to it have let go;
 * - a server owns and supervises its instance: a second server on the folder is refused
 *   (DataDirInUseError naming the first one's pid), and a server finding a tool's instance waits
 *   for the tool to finish, then starts its own.
 * Without a lock holder, any record and pid files left behind are stale: what they name is stopped
 * if (and only if) it still runs postgres or the gateway on this folder.
 */
export async function openDocumentDb(
  paths: DocumentDbPaths,
  folder: string,
  opts: OpenOptions,
): Promise<EmbeddedDocumentDb> {
  const report = opts.report ?? ((m: string) => process.stderr.write(`documentdb: ${m}\n`));
  mkdirSync(folder, { recursive: true });
  const real = realpathSync(folder);
  const deadline = Date.now() + (opts.waitMs ?? 180_000);
  let lastReport = 0;
  let waitingFor = '';
  for (;;) {
    const owned = await startOwned(paths, real, opts, report);
    if (owned) return owned;
    const owner = await connectToOwner(real, opts.role);
    if (!owner) {
      await sleep(100); // let go meanwhile: try the lock again
      continue;
    }
    const r = owner.record;
    const who = `pid ${r.ownerPid} (${r.ownerRole === 'server' ? 'a server' : 'a tool'}, since ${r.startedAt})`;
    if (opts.role === 'server' && r.ownerRole === 'server') {
      owner.release();
      throw new DataDirInUseError(
        `DATA_DIR is in use: its embedded database ${real} is run by the server pid ${r.ownerPid} ` +
          `(since ${r.startedAt}, port ${r.port}). ` +
          'Stop that server first, or give this one another DATA_DIR (or MONGO_URL).',
      );
    }
    const problem =
      opts.role === 'server'
        ? `held by ${who} for its run`
        : r.state !== 'running'
          ? `${r.state}`
          : (deadProcesses({ ...r, folder: real }) ??
            ((await gatewayAnswers(documentDbUri(real, r.port)))
              ? undefined
              : `port ${r.port} does not answer`));
    if (!problem) {
      report(`attached to the running instance of ${who} on port ${r.port}`);
      return {
        uri: documentDbUri(real, r.port),
        version: r.version,
        owned: false,
        ownerPid: r.ownerPid,
        stop: async () => owner.release(),
      };
    }
    owner.release();
    if (Date.now() > deadline) {
      throw new Error(`the embedded database ${real} of ${who} is not usable (${problem}); gave up waiting`);
    }
    if (Date.now() - lastReport > 10_000 || problem !== waitingFor) {
      report(`waiting for the embedded database ${real}: ${problem}`);
      lastReport = Date.now();
      waitingFor = problem;
    }
    await sleep(250);
  }
}

/** Takes the lock and starts the instance; undefined when another process holds the lock. */
async function startOwned(
  paths: DocumentDbPaths,
  real: string,
  opts: OpenOptions,
  report: (message: string) => void,
): Promise<EmbeddedDocumentDb | undefined> {
  const record: InstanceRecord = {
    ownerPid: process.pid,
    ownerRole: opts.role,
    state: 'starting',
    startedAt: new Date().toISOString(),
    folder: real,
    port: 0,
    postgresPid: 0,
    gatewayPid: 0,
    version: '',
  };
  const lock = await HeldLock.take(real, () => record);
  if (!lock) return undefined;
  const file = join(real, RECORD);
  const write = () => {
    // whole or not at all: a reader never sees half a record
    writeFileSync(`${file}.tmp`, JSON.stringify(record, null, 2) + '\n');
    renameSync(`${file}.tmp`, file);
  };
  let db: DocumentDbInstance;
  try {
    stopStaleRecord(file, real);
    write();
    db = await DocumentDbInstance.start(paths, real, undefined, report);
  } catch (e) {
    rmSync(file, { force: true });
    await lock.release();
    throw e;
  }
  const update = (state: InstanceRecord['state']) => {
    Object.assign(record, {
      state,
      port: db.port,
      postgresPid: db.postgresPid ?? 0,
      gatewayPid: db.gatewayPid ?? 0,
      version: db.version,
    });
    write();
  };
  update('running');
  const supervisor =
    opts.supervise &&
    new DocumentDbSupervisor(
      db,
      { log: report, onState: update, onGiveUp: opts.supervise.onGiveUp },
      opts.supervise.policy,
    );
  const stopUpkeep =
    opts.indexUpkeep && new IndexUpkeep((sql) => db.adminSql(sql), report, opts.indexUpkeep).start();
  let stopping: Promise<void> | undefined;
  const stop = async () => {
    if (opts.role === 'tool') {
      await lock.drained(DRAIN_MS, (attached) =>
        report(
          `waiting for ${attached.map((a) => `pid ${a.pid} (${a.role})`).join(', ')} to finish with the database`,
        ),
      );
    }
    supervisor?.stop();
    stopUpkeep?.();
    await db.stop();
    rmSync(file, { force: true });
    await lock.release();
  };
  return {
    uri: db.uri,
    version: db.version,
    owned: true,
    ownerPid: process.pid,
    stop: () => (stopping ??= stop()),
  };
}

/**
 * A record left by an owner that is gone (nobody holds the lock): stops what it names if that still
 * runs postgres or the gateway on this folder (the pid files are checked the same way at start).
 */
function stopStaleRecord(file: string, folder: string): void {
  if (!existsSync(file)) return;
  const record = parseInstanceRecord(readFileSync(file, 'utf8'));
  if (typeof record !== 'string') {
    stopStalePid(record.gatewayPid, 'documentdb_gateway', folder, 'SIGKILL');
    stopStalePid(record.postgresPid, 'postgres', folder, 'SIGQUIT');
  }
  rmSync(file, { force: true });
}
