import { ChildProcess, execFile, spawn } from 'child_process';
import { createHash, randomBytes } from 'crypto';
import {
  chmodSync,
  chownSync,
  existsSync,
  mkdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'fs';
import { dirname, join } from 'path';
import { promisify } from 'util';
import { MongoClient } from 'mongodb';
import { freePort } from './free-port';
import { stopStaleProcess, stopChild } from './child-processes';
import {
  BackendRecycling,
  backendRecyclingSql,
  DEFAULT_BACKEND_RECYCLING,
  isGatewayDataPool,
} from './gateway-backend-recycling';
import { resourceRowStorageSql } from './resource-row-storage';
import {
  hasExtendedRum,
  INSTALL_COMMAND,
  preloadAndIndexSettings,
  type DocumentDbPaths,
} from './documentdb-kits';
import { readUpgradeState, rebuildIndexes, upgradeCatalog, type UpgradeTarget } from './documentdb-upgrade';

export { documentDbPaths, missingDocumentDb, type DocumentDbPaths } from './documentdb-kits';

const run = promisify(execFile);

export interface RunningDocumentDb {
  uri: string;
  /** The gateway's process id (tests pause it to play a hung database). */
  gatewayPid?: number;
  version: string;
  stop(): Promise<void>;
}

const MONGO_USER = 'fhir';
const PG_SOCKET_NUMBER = 9712;
/** Written last by a first start: without it the cluster is half made and is made again. */
const READY_MARKER = 'initialized';

interface Layout {
  root: string;
  pgData: string;
  socketDir: string;
  gatewayDir: string;
  logs: string;
  passwordFile: string;
}

function layoutOf(root: string): Layout {
  let socketDir = join(root, 'run');
  // Unix socket paths are limited to 107 bytes.
  if (socketDir.length + 20 > 100) {
    socketDir = `/tmp/docdb-sock-${createHash('sha256').update(root).digest('hex').slice(0, 12)}`;
  }
  return {
    root,
    pgData: join(root, 'pg'),
    socketDir,
    gatewayDir: join(root, 'gateway'),
    logs: join(root, 'logs'),
    passwordFile: join(root, 'password'),
  };
}

/** PostgreSQL refuses to run as root: root runs both children as the `postgres` OS user. */
interface RunAs {
  uid: number;
  gid: number;
  wrap(cmd: string, args: string[], deathSignal: string): [string, string[]];
}

async function runAs(): Promise<RunAs> {
  const asRoot = process.getuid?.() === 0;
  const ids = asRoot
    ? await Promise.all([run('id', ['-u', 'postgres']), run('id', ['-g', 'postgres'])]).catch(() => {
        throw new Error(
          'running as root needs the `postgres` OS user (apt package postgresql-15 creates it)',
        );
      })
    : undefined;
  const uid = ids ? Number(ids[0].stdout.trim()) : process.getuid!();
  const gid = ids ? Number(ids[1].stdout.trim()) : process.getgid!();
  return {
    uid,
    gid,
    // setpriv sets the parent-death signal after the user switch, so a SIGKILLed app still takes
    // its database down with it; a stale instance is also stopped at the next start.
    wrap: (cmd, args, deathSignal) => [
      'setpriv',
      [
        ...(asRoot ? [`--reuid=${uid}`, `--regid=${gid}`, '--init-groups'] : []),
        `--pdeathsig=${deathSignal}`,
        '--',
        cmd,
        ...args,
      ],
    ],
  };
}

/**
 * Run as root, the database runs as `postgres`, which must be able to pass through every folder
 * above DATA_DIR (a `mkdtemp` folder is 0700). Those folders get search permission for others
 * (`o+x`: pass through, not list); each change is reported.
 */
function letUserReach(root: string, user: RunAs, report: (message: string) => void): void {
  if (process.getuid?.() !== 0) return;
  for (let dir = dirname(root); ; dir = dirname(dir)) {
    const mode = statSync(dir).mode;
    if ((mode & 0o001) === 0) {
      chmodSync(dir, (mode & 0o7777) | 0o001);
      report(
        `gave ${dir} search permission (o+x) so that the database user (uid ${user.uid}) can reach DATA_DIR`,
      );
    }
    if (dir === dirname(dir)) return;
  }
}

function prepareFolders(l: Layout, user: RunAs): void {
  for (const dir of [l.root, l.socketDir, l.gatewayDir, l.logs]) mkdirSync(dir, { recursive: true });
  chmodSync(l.socketDir, 0o700);
  for (const dir of [l.root, l.socketDir, l.gatewayDir, l.logs]) chownSync(dir, user.uid, user.gid);
  if (existsSync(l.pgData)) chownSync(l.pgData, user.uid, user.gid);
}

async function asUser(user: RunAs, cmd: string, args: string[]): Promise<string> {
  const [c, a] = user.wrap(cmd, args, 'KILL');
  const { stdout } = await run(c, a, { maxBuffer: 16 * 1024 * 1024 });
  return stdout;
}

/** initdb with the settings of the kit's start.sh; PostgreSQL listens on a Unix socket only. */
async function initCluster(l: Layout, paths: DocumentDbPaths, user: RunAs): Promise<void> {
  rmSync(l.pgData, { recursive: true, force: true });
  rmSync(join(l.root, READY_MARKER), { force: true });
  await asUser(user, join(paths.pgBinDir, 'initdb'), [
    '-D',
    l.pgData,
    '-U',
    'postgres',
    '--auth=trust',
    '-E',
    'UTF8',
    '--locale=C.UTF-8',
  ]);
  const conf = [
    '',
    '# ---- DocumentDB (written by the FHIR data service on first start) ----',
    "listen_addresses = ''",
    'max_connections = 300',
    ...preloadAndIndexSettings(paths),
    "cron.database_name = 'postgres'",
    'cron.log_statement = off',
    'documentdb.enableBackgroundWorker = true',
    'documentdb.enableBackgroundWorkerJobs = true',
    'ssl = off',
    'jit = off',
    "shared_buffers = '512MB'",
    // Ordered compound index keys (like MongoDB's B-trees): fixed at cluster creation so that
    // re-creating an existing index stays idempotent.
    'documentdb.defaultUseCompositeOpClass = on',
    "include_if_exists = 'docdb-extra.conf'",
    '',
  ].join('\n');
  writeFileSync(
    join(l.pgData, 'postgresql.conf'),
    readFileSync(join(l.pgData, 'postgresql.conf'), 'utf8') + conf,
  );
}

/** Whether the cluster of `l` was made (or upgraded) to run on the extended RUM. */
function clusterUsesExtendedRum(l: Layout): boolean {
  return /^shared_preload_libraries = .*pg_documentdb_extended_rum/m.test(
    readFileSync(join(l.pgData, 'postgresql.conf'), 'utf8'),
  );
}

/**
 * A cluster of the new kit (or one being upgraded to it) cannot start on the 0.108 tree: say so
 * instead of a postgres error. Whether a 0.108 cluster on the new tree is upgraded: src/database/
 * documentdb-upgrade.ts.
 */
function refuseNewerCluster(l: Layout, paths: DocumentDbPaths): void {
  if (hasExtendedRum(paths)) return;
  const upgrading = readUpgradeState(l.root) !== undefined;
  if (clusterUsesExtendedRum(l) || upgrading) {
    throw new Error(
      `${l.root} was ${upgrading ? 'being upgraded' : 'made'} by the DocumentDB kit with the extended RUM ` +
        `(0.112), which ${paths.pgBinDir} lacks: install that kit (${INSTALL_COMMAND}) and leave ` +
        'DOCUMENTDB_KIT unset, or use another DATA_DIR',
    );
  }
}

async function psql(l: Layout, paths: DocumentDbPaths, user: RunAs, sql: string): Promise<string> {
  return asUser(user, join(paths.pgBinDir, 'psql'), [
    '-h',
    l.socketDir,
    '-p',
    String(PG_SOCKET_NUMBER),
    '-U',
    'postgres',
    '-d',
    'postgres',
    '-X',
    '-q',
    '-v',
    'ON_ERROR_STOP=1',
    '-tA',
    '-c',
    sql,
  ]);
}

/** The extension and the gateway's login; idempotent, so a start interrupted half way repeats it. */
async function initDatabase(l: Layout, paths: DocumentDbPaths, user: RunAs, password: string) {
  await psql(l, paths, user, 'CREATE EXTENSION IF NOT EXISTS documentdb CASCADE');
  // before any index: indexes built earlier keep the stock classes and never walk in order
  if (hasExtendedRum(paths))
    await psql(l, paths, user, 'CREATE EXTENSION IF NOT EXISTS documentdb_extended_rum');
  const exists = (await psql(l, paths, user, `SELECT 1 FROM pg_roles WHERE rolname='${MONGO_USER}'`)).trim();
  const verb = exists === '1' ? 'ALTER' : 'CREATE';
  // The password is hex (no quoting issues) and goes over the private socket only.
  await psql(l, paths, user, `${verb} ROLE "${MONGO_USER}" WITH LOGIN INHERIT PASSWORD '${password}'`);
  if (verb === 'CREATE') {
    await psql(l, paths, user, `GRANT documentdb_admin_role TO "${MONGO_USER}"`);
    await psql(l, paths, user, `ALTER ROLE "${MONGO_USER}" CREATEROLE`);
    await psql(l, paths, user, `GRANT "${MONGO_USER}" TO postgres WITH ADMIN OPTION`);
  }
}

function readOrCreatePassword(l: Layout, fresh: boolean): string {
  if (!fresh && existsSync(l.passwordFile)) return readFileSync(l.passwordFile, 'utf8').trim();
  const password = randomBytes(24).toString('hex');
  writeFileSync(l.passwordFile, password + '\n', { mode: 0o600 });
  chmodSync(l.passwordFile, 0o600);
  return password;
}

async function writeGatewayConfig(l: Layout, user: RunAs, port: number): Promise<string> {
  const cert = join(l.gatewayDir, 'cert.pem');
  const key = join(l.gatewayDir, 'key.pem');
  if (!existsSync(cert) || !existsSync(key)) {
    // The gateway needs a certificate even when TLS is not required on its port.
    await run('openssl', [
      'req',
      '-x509',
      '-newkey',
      'rsa:2048',
      '-nodes',
      '-days',
      '3650',
      '-subj',
      '/CN=localhost',
      '-keyout',
      key,
      '-out',
      cert,
    ]);
    chmodSync(key, 0o600);
    chownSync(key, user.uid, user.gid);
    chownSync(cert, user.uid, user.gid);
  }
  const file = join(l.gatewayDir, 'SetupConfiguration.json');
  const config = {
    NodeHostName: 'localhost',
    BlockedRolePrefixes: ['documentdb', 'citus', 'pg', 'internal_role'],
    PostgresSystemUser: 'postgres',
    PostgresHostName: l.socketDir,
    PostgresPort: PG_SOCKET_NUMBER,
    PostgresDatabase: 'postgres',
    GatewayListenPort: port,
    UseLocalHost: true,
    // plain TCP on the loopback: `EnforceTls` since DocumentDB 0.109, `EnforceSslTcp` before (each
    // gateway ignores the other's name, and the new one refuses plain TCP without its own)
    EnforceTls: false,
    EnforceSslTcp: false,
    TransactionTimeoutSecs: 30,
    CursorTimeoutSecs: 600,
    PostgresCommandTimeoutSecs: 120,
    CertificateOptions: { CertType: 'PemFile', FilePath: cert, KeyFilePath: key },
  };
  writeFileSync(file, JSON.stringify(config, null, 2));
  chownSync(file, user.uid, user.gid);
  return file;
}

interface Spawned {
  child: ChildProcess;
  tail(): string;
}

function spawnLogged(user: RunAs, cmd: string, args: string[], cwd: string, signal: string): Spawned {
  const [c, a] = user.wrap(cmd, args, signal);
  // Its own process group: a Ctrl-C in the terminal reaches only the app, which stops its
  // children itself (a child stopped by the terminal would look like a crash to the supervisor).
  const child = spawn(c, a, { cwd, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  let tail = '';
  const keep = (b: Buffer) => (tail = (tail + b.toString()).slice(-4000));
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  return { child, tail: () => tail };
}

const exited = (child: ChildProcess) => child.exitCode !== null || child.signalCode !== null;

async function waitFor(what: string, check: () => Promise<boolean>, child: ChildProcess, why: () => string) {
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    if (exited(child)) throw new Error(`${what} exited: ${why()}`);
    if (await check().catch(() => false)) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`${what} did not answer within 60 s: ${why()}`);
}

function logTail(file: string): string {
  try {
    return readFileSync(file, 'utf8').slice(-1500);
  } catch {
    return '';
  }
}

export type DocumentDbChild = 'postgres' | 'gateway';

/** The gateway's connection string for a data folder's instance listening on `port`. */
export function documentDbUri(dir: string, port: number): string {
  const password = readFileSync(layoutOf(dir).passwordFile, 'utf8').trim();
  return `mongodb://${MONGO_USER}:${password}@127.0.0.1:${port}/?authMechanism=SCRAM-SHA-256`;
}

/**
 * DocumentDB (PostgreSQL 15 + the documentdb extension, and its MongoDB-wire gateway) as two child
 * processes under `dir`, initialising the cluster on first start the way the kit's start.sh does.
 * A first start cut off half way is detected (no ready marker) and done again. Each child can be
 * started again on its own (the gateway on the same port, so connected drivers find it again).
 */
export class DocumentDbInstance implements RunningDocumentDb {
  uri = '';
  version = '';
  port = 0;
  private postgres?: Spawned;
  private gateway?: Spawned;
  private readonly expected = new Set<ChildProcess>();
  private onExit?: (which: DocumentDbChild, how: string) => void;

  private constructor(
    private readonly paths: DocumentDbPaths,
    readonly dir: string,
    private readonly l: Layout,
    private readonly user: RunAs,
  ) {}

  static async start(
    paths: DocumentDbPaths,
    dir: string,
    gatewayPort?: number,
    report: (message: string) => void = (m) => process.stderr.write(`documentdb: ${m}\n`),
    recycling: BackendRecycling = DEFAULT_BACKEND_RECYCLING,
  ): Promise<DocumentDbInstance> {
    const l = layoutOf(dir);
    const user = await runAs();
    stopStaleProcess(join(l.root, 'gateway.pid'), 'documentdb_gateway', l.root, 'SIGKILL');
    stopStaleProcess(join(l.pgData, 'postmaster.pid'), 'postgres', l.root, 'SIGQUIT');
    prepareFolders(l, user);
    letUserReach(l.root, user, report);
    const fresh = !existsSync(join(l.root, READY_MARKER)) || !existsSync(join(l.pgData, 'PG_VERSION'));
    if (fresh) await initCluster(l, paths, user);
    else refuseNewerCluster(l, paths);
    const upgradeNeeded = !fresh && hasExtendedRum(paths) && !clusterUsesExtendedRum(l);
    const password = readOrCreatePassword(l, fresh);
    const db = new DocumentDbInstance(paths, dir, l, user);
    try {
      await db.startPostgres();
      if (fresh) {
        await initDatabase(l, paths, user, password);
        writeFileSync(join(l.root, READY_MARKER), new Date().toISOString() + '\n');
      }
      const upgrade = fresh
        ? undefined
        : await upgradeCatalog(db.upgradeTarget(report), upgradeNeeded, preloadAndIndexSettings(paths));
      db.version = (
        await psql(
          l,
          paths,
          user,
          "SELECT 'DocumentDB ' || extversion || CASE WHEN EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'documentdb_extended_rum') THEN ' (extended RUM)' ELSE '' END || ' on PostgreSQL ' || current_setting('server_version') FROM pg_extension WHERE extname='documentdb'",
        )
      ).trim();
      if (!db.version) throw new Error('the documentdb extension is missing from the cluster');
      // At every start, so that clusters made before it get it too (src/database/gateway-backend-recycling.ts).
      await psql(l, paths, user, backendRecyclingSql(MONGO_USER, recycling));
      await psql(l, paths, user, resourceRowStorageSql(paths.resourceRows));
      db.port = gatewayPort ?? (await freePort());
      db.uri = `mongodb://${MONGO_USER}:${password}@127.0.0.1:${db.port}/?authMechanism=SCRAM-SHA-256`;
      await db.startGateway();
      if (upgrade) await rebuildIndexes(db.upgradeTarget(report), db.uri, upgrade);
      return db;
    } catch (e) {
      await db.stop();
      throw e;
    }
  }

  private upgradeTarget(report: (message: string) => void): UpgradeTarget {
    return {
      root: this.l.root,
      confFile: join(this.l.pgData, 'postgresql.conf'),
      sql: (statement) => this.adminSql(statement),
      restartPostgres: async () => {
        await this.stopChild(this.postgres, 'SIGINT', 15_000);
        await this.startPostgres();
      },
      report,
    };
  }

  get postgresPid(): number | undefined {
    return this.postgres?.child.pid;
  }

  /** The gateway's process id (tests pause it to play a hung database). */
  get gatewayPid(): number | undefined {
    return this.gateway?.child.pid;
  }

  /** A statement run as the engine's superuser (its own upkeep: src/database/index-upkeep.ts). */
  adminSql(sql: string): Promise<string> {
    return psql(this.l, this.paths, this.user, sql);
  }

  /** The PostgreSQL backends of the gateway's data pool now: process id and age in seconds. */
  async gatewayBackends(): Promise<Array<{ pid: number; ageSeconds: number }>> {
    const rows = await psql(
      this.l,
      this.paths,
      this.user,
      `SELECT pid || ' ' || extract(epoch FROM now() - backend_start) FROM pg_stat_activity WHERE ${isGatewayDataPool('application_name')} AND usename = '${MONGO_USER}'`,
    );
    return rows
      .split('\n')
      .filter((line) => line.trim())
      .map((line) => {
        const [pid, age] = line.trim().split(' ');
        return { pid: Number(pid), ageSeconds: Number(age) };
      });
  }

  /** Which children are not running now. */
  down(): DocumentDbChild[] {
    const down: DocumentDbChild[] = [];
    if (!this.postgres || exited(this.postgres.child)) down.push('postgres');
    if (!this.gateway || exited(this.gateway.child)) down.push('gateway');
    return down;
  }

  /** Called when a child exits that was not being stopped (at most one listener: the supervisor). */
  onUnexpectedExit(listener: (which: DocumentDbChild, how: string) => void): void {
    this.onExit = listener;
  }

  /** Starts again what is down; postgres down means the gateway is started again after it. */
  async repair(): Promise<void> {
    const down = this.down();
    if (down.includes('postgres')) {
      await this.stopChild(this.gateway, 'SIGINT', 5_000);
      await this.startPostgres();
    }
    if (down.length > 0) await this.startGateway();
  }

  async startPostgres(): Promise<void> {
    const { l, paths } = this;
    const pgLog = join(l.logs, 'postgres.log');
    const pg = spawnLogged(
      this.user,
      join(paths.pgBinDir, 'postgres'),
      [
        '-D',
        l.pgData,
        '-c',
        `port=${PG_SOCKET_NUMBER}`,
        '-c',
        `unix_socket_directories=${l.socketDir}`,
        // No TCP listener: pg_cron (index builds, TTL) and DocumentDB's own loopback use the socket.
        '-c',
        `cron.host=${l.socketDir}`,
        '-c',
        `documentdb.localhost_connection_string=host=${l.socketDir}`,
        '-c',
        `log_destination=stderr`,
        '-c',
        'logging_collector=on',
        '-c',
        `log_directory=${l.logs}`,
        '-c',
        'log_filename=postgres.log',
        // Documents over ~2 KB are stored compressed, and DocumentDB decompresses a stored document
        // again for every condition, sort key and projected field it evaluates on it: lz4 instead of
        // the default pglz halves that per-row cost (measured: a user's _lastUpdated page 52 → 26 ms
        // of engine CPU, patient+date 25 → 13 ms; inserts unchanged; docs/storage.md). A start
        // setting, so existing clusters write new rows with it too.
        '-c',
        'default_toast_compression=lz4',
      ],
      l.root,
      'INT',
    );
    this.watch('postgres', pg);
    this.postgres = pg;
    const isReady = join(paths.pgBinDir, 'pg_isready');
    await waitFor(
      'postgres',
      async () => (await run(isReady, ['-q', '-h', l.socketDir, '-p', String(PG_SOCKET_NUMBER)]), true),
      pg.child,
      () => pg.tail() + logTail(pgLog),
    );
  }

  async startGateway(): Promise<void> {
    const config = await writeGatewayConfig(this.l, this.user, this.port);
    const gw = spawnLogged(this.user, this.paths.gatewayBin, [config], this.l.gatewayDir, 'TERM');
    this.watch('gateway', gw);
    this.gateway = gw;
    if (gw.child.pid) writeFileSync(join(this.l.root, 'gateway.pid'), String(gw.child.pid));
    await waitFor(
      'documentdb gateway',
      () => ping(this.uri),
      gw.child,
      () => gw.tail(),
    );
  }

  async stop(): Promise<void> {
    this.onExit = undefined;
    await this.stopChild(this.gateway, 'SIGINT', 5_000);
    await this.stopChild(this.postgres, 'SIGINT', 15_000);
  }

  private watch(which: DocumentDbChild, spawned: Spawned): void {
    spawned.child.once('exit', (code, signal) => {
      if (this.expected.delete(spawned.child)) return;
      if (signal) return this.onExit?.(which, `killed by ${signal}`);
      // an exit of its own: its last line says why (a signal from outside says nothing more)
      const last = spawned.tail().trim().split('\n').pop()?.slice(0, 300);
      this.onExit?.(which, last ? `exit code ${code}: ${last}` : `exit code ${code}`);
    });
  }

  private async stopChild(spawned: Spawned | undefined, signal: NodeJS.Signals, graceMs: number) {
    if (!spawned || exited(spawned.child)) return;
    this.expected.add(spawned.child);
    await stopChild(spawned.child, signal, graceMs);
  }
}

/** Starts DocumentDB under `dir` for this process alone (no lock: tests with a folder of their own). */
export async function startDocumentDb(
  paths: DocumentDbPaths,
  dir: string,
  gatewayPort?: number,
  report?: (message: string) => void,
  recycling?: BackendRecycling,
): Promise<DocumentDbInstance> {
  return DocumentDbInstance.start(paths, dir, gatewayPort, report, recycling);
}

async function ping(uri: string): Promise<boolean> {
  const client = new MongoClient(uri, { serverSelectionTimeoutMS: 1000, connectTimeoutMS: 1000 });
  try {
    await client.db('admin').command({ ping: 1 });
    return true;
  } finally {
    await client.close().catch(() => undefined);
  }
}

/** Whether the gateway at `uri` answers a ping within a second. */
export const gatewayAnswers = (uri: string): Promise<boolean> => ping(uri).catch(() => false);
