import { existsSync } from 'node:fs';
import { basename, join, resolve } from 'node:path';
import { startOwnServer, type OwnServer } from '../lib/own-server';
import { processTree } from '../lib/process-stats';

/**
 * A FHIR R4 server under comparison: its base URL, the headers every request carries, and the
 * process trees whose CPU time is counted (optional for a server started elsewhere).
 */
export interface Target {
  name: string;
  /** What answers, when known (our embedded engine's description). */
  engine?: string;
  /** FHIR base without a trailing slash, e.g. http://127.0.0.1:8080/fhir */
  base: string;
  headers: Record<string, string>;
  /** Named groups of processes whose CPU seconds are read before and after each measurement. */
  cpu: () => Record<string, number[]>;
  /** Skip the ingest: the data is already there (a second run against a kept server). */
  loaded: boolean;
  stop(): Promise<void>;
}

export interface PeerOptions {
  targets: Target[];
  patients: number;
  rounds: number;
  seconds: number;
  warmup: number;
  ingestParallel: number;
  ingestChunks: number;
  only?: string;
}

const USAGE = `npm run bench -- peer [target…] [options]
targets (one or more; runs interleave over them):
  --base <FHIR R4 base URL>   a running server, e.g. http://127.0.0.1:8080/fhir; then, for it:
    --name <label>            (default: host:port)
    --token <bearer token>    Authorization: Bearer …
    --header '<Name>: <value>' (repeatable)
    --pid <name>=<pid>        count CPU of that process tree (repeatable), e.g. --pid jvm=123 --pid db=456
    --loaded                  the data is already stored (skip ingest)
  --ours                      our server built from this checkout, in its own process on an embedded database
  --ours-from <checkout>      the same for another built checkout (dist/src/main.js), e.g. main for an
                              A/B pair with --ours; its data, database and users are its own
options:
  --patients N (20)  --rounds R (2)  --seconds S per measurement (10)  --warmup S (2)
  --ingest-parallel N bundles in flight (4)  --ingest-chunks K interleaved ingest rounds (4)
  --only <substring of a scenario name>[,<another>…]`;

/** A target from the command line; `--ours` starts our server and is stopped by `stop()`. */
export async function parseArgs(argv: string[]): Promise<PeerOptions> {
  const options: PeerOptions = {
    targets: [],
    patients: 20,
    rounds: 2,
    seconds: 10,
    warmup: 2,
    ingestParallel: 4,
    ingestChunks: 4,
  };
  const pending: Array<() => Promise<Target>> = [];
  let current: (Target & { pids: Record<string, number> }) | undefined;
  const value = (i: number) => {
    if (argv[i + 1] === undefined) throw new Error(`${argv[i]} needs a value\n${USAGE}`);
    return argv[i + 1];
  };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const needCurrent = () => {
      if (!current) throw new Error(`${a} belongs after a --base\n${USAGE}`);
      return current;
    };
    switch (a) {
      case '--base': {
        const base = value(i++).replace(/\/+$/, '');
        const t: Target & { pids: Record<string, number> } = {
          name: new URL(base).host,
          base,
          headers: {},
          pids: {},
          loaded: false,
          cpu: () =>
            Object.fromEntries(Object.entries(t.pids).map(([name, pid]) => [name, processTree(pid)])),
          stop: async () => undefined,
        };
        current = t;
        pending.push(async () => t);
        break;
      }
      case '--name':
        needCurrent().name = value(i++);
        break;
      case '--token':
        needCurrent().headers.Authorization = `Bearer ${value(i++)}`;
        break;
      case '--header': {
        const h = value(i++);
        const colon = h.indexOf(':');
        if (colon < 1) throw new Error(`--header wants 'Name: value', got "${h}"`);
        needCurrent().headers[h.slice(0, colon).trim()] = h.slice(colon + 1).trim();
        break;
      }
      case '--pid': {
        const [name, pid] = value(i++).split('=');
        if (!name || !/^\d+$/.test(pid ?? '')) throw new Error(`--pid wants name=<pid>`);
        needCurrent().pids[name] = Number(pid);
        break;
      }
      case '--loaded':
        needCurrent().loaded = true;
        break;
      case '--ours':
        current = undefined;
        pending.push(() => oursTarget());
        break;
      case '--ours-from': {
        const checkout = resolve(value(i++));
        if (!existsSync(join(checkout, 'dist', 'src', 'main.js')))
          throw new Error(`--ours-from ${checkout}: no dist/src/main.js there (npm run build in it first)`);
        current = undefined;
        pending.push(() => oursTarget(checkout));
        break;
      }
      case '--patients':
      case '--rounds':
      case '--seconds':
      case '--warmup':
      case '--ingest-parallel':
      case '--ingest-chunks': {
        const n = Number(value(i++));
        if (!Number.isFinite(n) || n < 0) throw new Error(`${a} wants a number`);
        const key = a.slice(2).replace(/-(\w)/g, (_, c: string) => c.toUpperCase()) as
          'patients' | 'rounds' | 'seconds' | 'warmup' | 'ingestParallel' | 'ingestChunks';
        options[key] = n;
        break;
      }
      case '--only':
        options.only = value(i++);
        break;
      default:
        throw new Error(`unknown argument "${a}"\n${USAGE}`);
    }
  }
  if (pending.length === 0) throw new Error(`no target\n${USAGE}`);
  for (const make of pending) options.targets.push(await make());
  return options;
}

/** Our server from this checkout, or from another built one (`checkout`: named after its folder). */
async function oursTarget(checkout?: string): Promise<Target> {
  let own: OwnServer;
  try {
    own = await startOwnServer(1, 1, {}, checkout);
  } catch (error) {
    throw new Error(`could not start our server: ${(error as Error).message}`);
  }
  return {
    name: checkout ? `ours@${basename(checkout)}` : 'ours',
    engine: own.engine,
    base: `${own.url}/r4`,
    headers: { Authorization: `Bearer ${own.users[0].accessToken}` },
    cpu: () => ({ server: [own.serverPid], db: own.databasePids() }),
    loaded: false,
    stop: () => own.stop(),
  };
}
