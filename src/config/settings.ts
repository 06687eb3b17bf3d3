/**
 * Typed settings, parsed and validated once at boot from the environment. Every bad key is
 * collected so that one message names all of them: an operator fixes them in one go. `.env.example` documents each.
 */
export interface Settings {
  port: number;
  host: string;
  mongoUrl?: string;
  mongoDb: string;
  dataDir: string;
  /** The embedded database, when MONGO_URL is unset (src/database/embedded-database.ts). */
  engine: EngineSettings;
  logLevel: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';
  /** Public URLs of the spec's hosts, used only to write absolute links. */
  urls: {
    base: string;
    auth: string;
    analytics: string;
    gateway: string;
    demoGateway: string;
    systemSearch: string;
  };
  jwt: {
    /** PEM of an RSA private key (RS256). Generated into DATA_DIR for development when unset. */
    privateKeyPem?: string;
    issuer: string;
    audience: string;
  };
  accessTokenTtlSeconds: number;
  refreshTokenTtlSeconds: number;
  authCodeTtlSeconds: number;
  /** Lifetime of a code issued at SMART App Launch authorize (a browser redirect: minutes at most). */
  launchCodeTtlSeconds: number;
  bodyLimitBytes: number;
  /** Largest single resource stored (bytes of its JSON); larger → 413. */
  maxResourceBytes: number;
  /** Most repetitions of one element in a posted resource; more → 400. */
  maxArrayLength: number;
  /** A caller's FHIRPath (FHIRPath Patch) runs in a worker for at most this long; past it → 422. */
  fhirpathTimeoutMs: number;
  /** Worker threads evaluating callers' FHIRPath, and evaluations that may wait for one (then 503). */
  fhirpathWorkers: number;
  fhirpathMaxQueue: number;
  /** FHIR requests one client may have in flight at once; more → 429. */
  clientMaxConcurrentRequests: number;
  /** FHIR response bytes one client is served per second on average (token bucket); over → 429. */
  clientResponseBytesPerSecond: number;
  /** Database time (ms, summed over a request's commands) one client may use per second on average while others are active; over → 429. */
  clientDatabaseMsPerSecond: number;
  /**
   * The least part (percent) of CLIENT_DATABASE_MS_PER_SECOND a client of costly requests keeps while
   * another caller contends (its share scales with FULL_SHARE_COST_MS over its expected database time
   * per request), and what a client whose requests wait behind its own lane cap keeps; 100 turns
   * both off.
   */
  clientCostlyDatabaseSharePercent: number;
  /** Time (ms) one client's FHIRPath may hold workers of the shared pool per second on average while others are active; over → 429. */
  clientWorkerMsPerSecond: number;
  /** Event-loop time (ms) one client's request steps (body parse, body walk, narrative slices) may take per second on average while others are active; over → 429. */
  clientLoopMsPerSecond: number;
  /** FHIR reads (GET, `_search`) that run at once, all clients together; more wait (fair queue). */
  serverMaxConcurrentReads: number;
  /** FHIR writes (create, update, delete, bundles) that run at once, all clients together; more wait. */
  serverMaxConcurrentWrites: number;
  /** A waiting request of a client already holding its share of the server is answered 429 after this (ms). */
  serverQueueWaitMs: number;
  /** A searchset page stops adding matches once their JSON passes this many bytes (at least one match). */
  searchPageMaxBytes: number;
  /** Longest request URL (path and query) accepted; longer → 414. */
  maxUrlLength: number;
  dbTimeoutMs: number;
  purgeBudgetMs: number;
  exportFileMaxResources: number;
  exportLinkTtlSeconds: number;
  /** An async export job whose run has not beaten for this long is taken over by the next poll. */
  exportJobStaleMs: number;
  searchMaxSkip: number;
  /**
   * Without `_total` (or with `_total=estimate`) a search counts its matches only up to this many:
   * an exact `Bundle.total` up to it, none above it (docs/api.md "Totals"). Small by default (1,000,
   * as HAPI FHIR counts): a count that stops there costs a few ms whatever the number of matches.
   */
  searchTotalExactUpTo: number;
  /** A search's count starts beside its page query once that query has run this long (SearchExecutor). */
  searchCountBesideAfterMs: number;
  userMgmtRateLimitPerHour: number;
  /** Failed client authentications per (client id, source address) per window, then 429. */
  authFailureLimit: number;
  /** Failed client authentications per source address (any client id) per window, then 429. */
  authFailureLimitPerAddress: number;
  authFailureWindowSeconds: number;
  /** Express `trust proxy`: which hops' X-Forwarded-For is believed for the source address. */
  trustProxy: boolean | number | string;
  fhirCorsOrigins: string[];
  directorySeed: boolean;
  /** Directory searches from an in-memory copy up to this many active entries (0: always the database). */
  directoryCacheMaxEntries: number;
  metricsEnabled: boolean;
  /**
   * `_content` words extracted and indexed at every write (FHIR_FULLTEXT=on). Off: no words, no
   * `search_txt` index, `_content`/`_text` answered 400 (docs/storage.md: about 30% of a write's index work).
   */
  fullText: boolean;
}

/** How the embedded database is found and run (README "Configuration", docs/storage.md "Engines"). */
export interface EngineSettings {
  /** DOCUMENTDB_KIT: the DocumentDB kit; unset, the new kit when it is installed, else 0.108. */
  kit?: 'next' | '0.108';
  /** DOCUMENTDB_PG_BIN_DIR / DOCUMENTDB_GATEWAY_BIN: binaries elsewhere, over the kit's paths. */
  pgBinDir?: string;
  gatewayBin?: string;
  /** EMBEDDED_RESOURCE_ROWS: how `resources` rows are stored (src/database/resource-row-storage.ts). */
  resourceRows: 'plain' | 'compressed';
  /** EMBEDDED_INDEX_UPKEEP=on: a tool (not the server) that owns the engine keeps its indexes small too. */
  indexUpkeep: boolean;
  /** MONGOMS_SYSTEM_BINARY: a mongod to run, before looking on PATH. */
  mongodBinary?: string;
  /** MONGOMS_DISABLE_DOWNLOAD: never download a MongoDB through mongodb-memory-server. */
  downloadDisabled: boolean;
}

export class SettingsError extends Error {
  constructor(readonly problems: string[]) {
    super(`invalid settings: ${problems.join('; ')}`);
  }
}

type Env = Record<string, string | undefined>;

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

class Reader {
  readonly problems: string[] = [];
  constructor(private readonly env: Env) {}

  str(key: string, fallback: string): string {
    const v = this.env[key];
    return v === undefined || v === '' ? fallback : v;
  }

  optional(key: string): string | undefined {
    const v = this.env[key];
    return v === undefined || v === '' ? undefined : v;
  }

  int(key: string, fallback: number, min: number, max: number): number {
    const raw = this.env[key];
    if (raw === undefined || raw === '') return fallback;
    const n = Number(raw);
    if (!/^-?\d+$/.test(raw.trim()) || !Number.isSafeInteger(n) || n < min || n > max) {
      this.problems.push(`${key} must be an integer from ${min} to ${max} (got "${raw}")`);
      return fallback;
    }
    return n;
  }

  bool(key: string, fallback: boolean): boolean {
    const raw = this.env[key];
    if (raw === undefined || raw === '') return fallback;
    if (/^(1|true|yes|on)$/i.test(raw)) return true;
    if (/^(0|false|no|off)$/i.test(raw)) return false;
    this.problems.push(`${key} must be true or false (got "${raw}")`);
    return fallback;
  }

  url(key: string, fallback: string): string {
    const raw = this.str(key, fallback);
    try {
      const u = new URL(raw);
      if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new Error('protocol');
      return raw.replace(/\/+$/, '');
    } catch {
      this.problems.push(`${key} must be an absolute http(s) URL (got "${raw}")`);
      return fallback;
    }
  }

  oneOf<T extends string>(key: string, allowed: readonly T[], fallback: T): T {
    const raw = this.env[key];
    if (raw === undefined || raw === '') return fallback;
    if ((allowed as readonly string[]).includes(raw)) return raw as T;
    this.problems.push(`${key} must be one of ${allowed.join(', ')} (got "${raw}")`);
    return fallback;
  }

  mongoUrl(key: string): string | undefined {
    const raw = this.optional(key);
    if (raw && !/^mongodb(\+srv)?:\/\//.test(raw)) {
      this.problems.push(`${key} must start with mongodb:// or mongodb+srv://`);
    }
    return raw;
  }
}

/** The database a MongoDB connection string names in its path (`mongodb://h/db?…`), if any. */
export function databaseInUrl(url: string | undefined): string | undefined {
  if (!url) return undefined;
  const afterScheme = url.replace(/^mongodb(\+srv)?:\/\//, '');
  const slash = afterScheme.indexOf('/');
  if (slash < 0) return undefined;
  const name = decodeURIComponent(afterScheme.slice(slash + 1).split('?')[0]);
  return name || undefined;
}

/** Parses `1mb`, `512kb`, `5000000` into bytes. */
function parseBytes(r: Reader, key: string, fallback: number): number {
  const raw = r.optional(key);
  if (raw === undefined) return fallback;
  const m = /^(\d+)\s*(b|kb|mb)?$/i.exec(raw.trim());
  if (!m) {
    r.problems.push(`${key} must be a size like 5mb, 512kb or 1000000 (got "${raw}")`);
    return fallback;
  }
  const unit = (m[2] ?? 'b').toLowerCase();
  return Number(m[1]) * (unit === 'mb' ? 1024 * 1024 : unit === 'kb' ? 1024 : 1);
}

/** TRUST_PROXY as Express takes it: true/false, a hop count, or addresses/subnets/`loopback`. */
function trustProxy(raw: string | undefined): boolean | number | string {
  if (raw === undefined || /^(0|false|no|off)$/i.test(raw)) return false;
  if (/^(true|yes|on)$/i.test(raw)) return true;
  if (/^\d+$/.test(raw)) return Number(raw);
  return raw;
}

function engineSettings(r: Reader): EngineSettings {
  const kit = r.oneOf('DOCUMENTDB_KIT', ['next', '0.108'] as const, 'next');
  return {
    kit: r.optional('DOCUMENTDB_KIT') === undefined ? undefined : kit,
    pgBinDir: r.optional('DOCUMENTDB_PG_BIN_DIR'),
    gatewayBin: r.optional('DOCUMENTDB_GATEWAY_BIN'),
    resourceRows: r.oneOf('EMBEDDED_RESOURCE_ROWS', ['plain', 'compressed'] as const, 'plain'),
    indexUpkeep: r.oneOf('EMBEDDED_INDEX_UPKEEP', ['on', 'off'] as const, 'off') === 'on',
    mongodBinary: r.optional('MONGOMS_SYSTEM_BINARY'),
    downloadDisabled: r.bool('MONGOMS_DISABLE_DOWNLOAD', false),
  };
}

/**
 * The embedded database's settings alone, for what starts an engine without the app (the test
 * setup, benches, engine tests); a bad value throws the same `SettingsError` as `parseSettings`.
 */
export function parseEngineSettings(env: Env): EngineSettings {
  const r = new Reader(env);
  const engine = engineSettings(r);
  if (r.problems.length > 0) throw new SettingsError(r.problems);
  return engine;
}

/** Defaults a caller sets apart from the service's own (the CLI logs warnings only unless LOG_LEVEL says). */
export interface SettingDefaults {
  logLevel?: Settings['logLevel'];
}

export function parseSettings(env: Env, defaults: SettingDefaults = {}): Settings {
  const r = new Reader(env);
  const port = r.int('PORT', 8080, 0, 65535);
  const host = r.str('HOST', '127.0.0.1');
  const self = `http://${host === '0.0.0.0' ? '127.0.0.1' : host}:${port}`;
  const base = r.url('BASE_URL', self);
  const settings: Settings = {
    port,
    host,
    mongoUrl: r.mongoUrl('MONGO_URL'),
    // The database named in MONGO_URL's path wins; MONGO_DB applies only when the URL names none.
    mongoDb: databaseInUrl(r.optional('MONGO_URL')) ?? r.str('MONGO_DB', 'fhir'),
    dataDir: r.str('DATA_DIR', './data'),
    engine: engineSettings(r),
    logLevel: r.oneOf('LOG_LEVEL', LOG_LEVELS, defaults.logLevel ?? 'info'),
    urls: {
      base,
      auth: r.url('AUTH_URL', base),
      analytics: r.url('ANALYTICS_URL', base),
      gateway: r.url('GATEWAY_URL', base),
      demoGateway: r.url('DEMO_GATEWAY_URL', base),
      systemSearch: r.url('SYSTEM_SEARCH_URL', base),
    },
    jwt: {
      privateKeyPem: r.optional('JWT_PRIVATE_KEY')?.replace(/\\n/g, '\n'),
      issuer: r.url('JWT_ISSUER', r.url('AUTH_URL', base)),
      audience: r.str('JWT_AUDIENCE', 'fhir-data-service'),
    },
    accessTokenTtlSeconds: r.int('ACCESS_TOKEN_TTL', 7200, 1, 86400 * 30),
    refreshTokenTtlSeconds: r.int('REFRESH_TOKEN_TTL', 86400 * 30, 1, 86400 * 365),
    authCodeTtlSeconds: r.int('AUTH_CODE_TTL', 7200, 1, 86400),
    launchCodeTtlSeconds: r.int('LAUNCH_CODE_TTL', 120, 1, 600),
    bodyLimitBytes: parseBytes(r, 'BODY_LIMIT', 5 * 1024 * 1024),
    maxUrlLength: r.int('MAX_URL_LENGTH', 8192, 256, 1024 * 1024),
    maxResourceBytes: parseBytes(r, 'MAX_RESOURCE_BYTES', 1024 * 1024),
    maxArrayLength: r.int('MAX_ARRAY_LENGTH', 1000, 1, 10000000),
    fhirpathTimeoutMs: r.int('FHIRPATH_TIMEOUT_MS', 250, 10, 10000),
    fhirpathWorkers: r.int('FHIRPATH_WORKERS', 2, 2, 64),
    fhirpathMaxQueue: r.int('FHIRPATH_MAX_QUEUE', 64, 1, 100000),
    clientMaxConcurrentRequests: r.int('CLIENT_MAX_CONCURRENT_REQUESTS', 16, 1, 100000),
    clientResponseBytesPerSecond: parseBytes(r, 'CLIENT_RESPONSE_BYTES_PER_SECOND', 4 * 1024 * 1024),
    clientDatabaseMsPerSecond: r.int('CLIENT_DATABASE_MS_PER_SECOND', 500, 0, 10000000),
    clientCostlyDatabaseSharePercent: r.int('CLIENT_COSTLY_DATABASE_SHARE_PERCENT', 10, 1, 100),
    clientWorkerMsPerSecond: r.int('CLIENT_WORKER_MS_PER_SECOND', 500, 0, 10000000),
    clientLoopMsPerSecond: r.int('CLIENT_LOOP_MS_PER_SECOND', 250, 0, 10000000),
    serverMaxConcurrentReads: r.int('SERVER_MAX_CONCURRENT_READS', 8, 1, 1000),
    serverMaxConcurrentWrites: r.int('SERVER_MAX_CONCURRENT_WRITES', 4, 1, 1000),
    serverQueueWaitMs: r.int('SERVER_QUEUE_WAIT_MS', 250, 0, 600000),
    searchPageMaxBytes: parseBytes(r, 'SEARCH_PAGE_MAX_BYTES', 1024 * 1024),
    dbTimeoutMs: r.int('DB_TIMEOUT_MS', 5000, 100, 120000),
    purgeBudgetMs: r.int('PURGE_BUDGET_MS', 30000, 100, 600000),
    exportFileMaxResources: r.int('EXPORT_FILE_MAX_RESOURCES', 10000, 1, 10000000),
    exportLinkTtlSeconds: r.int('EXPORT_LINK_TTL', 3600, 1, 86400 * 7),
    exportJobStaleMs: r.int('EXPORT_JOB_STALE_MS', 120000, 200, 3600000),
    searchMaxSkip: r.int('SEARCH_MAX_SKIP', 10000, 0, 1000000),
    searchTotalExactUpTo: r.int('SEARCH_TOTAL_EXACT_UP_TO', 1000, 0, 100000000),
    searchCountBesideAfterMs: r.int('SEARCH_COUNT_BESIDE_AFTER_MS', 15, 0, 600000),
    userMgmtRateLimitPerHour: r.int('USER_MGMT_RATE_LIMIT', 300, 1, 10000000),
    authFailureLimit: r.int('TOKEN_FAILURE_LIMIT', 20, 1, 10000000),
    authFailureLimitPerAddress: r.int('AUTH_FAILURE_LIMIT_PER_ADDRESS', 100, 1, 10000000),
    authFailureWindowSeconds: r.int('AUTH_FAILURE_WINDOW', 300, 1, 86400),
    trustProxy: trustProxy(r.optional('TRUST_PROXY')),
    fhirCorsOrigins: (r.optional('FHIR_CORS_ORIGINS') ?? '')
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean),
    directorySeed: r.bool('DIRECTORY_SEED', true),
    directoryCacheMaxEntries: r.int('DIRECTORY_CACHE_MAX_ENTRIES', 250000, 0, 10000000),
    metricsEnabled: r.bool('METRICS_ENABLED', false),
    fullText: r.oneOf('FHIR_FULLTEXT', ['on', 'off'] as const, 'on') === 'on',
  };
  if (r.problems.length > 0) throw new SettingsError(r.problems);
  return settings;
}
