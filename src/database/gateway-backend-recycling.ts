/**
 * Bounded lifetime for the PostgreSQL backends of the embedded DocumentDB's gateway (docs/memory.md).
 *
 * The gateway keeps one pool of PostgreSQL connections per login and hands them out first in,
 * first out, so under steady load every backend is used every few hundred milliseconds and none
 * is ever idle long enough to be closed: a backend lives as long as the gateway. Each backend's
 * private memory keeps growing while it serves (about 0.8 MB a minute under the soak's mix,
 * outside PostgreSQL's memory contexts, which stay at ~2 MB), so the database's memory grew
 * without bound. The gateway of this kit has no setting for a connection's lifetime and the
 * driver's connections do not map to backends (the pool is shared by all of them), so the engine
 * replaces its old backends itself: a pg_cron job terminates, every few seconds, one backend of
 * the gateway's data pool that is older than the bound, idle outside any transaction and holding
 * no open cursor, the one that went idle last — the last in the gateway's queue, so the one it is
 * least likely to hand out at that moment. The gateway notices the closed connection when it next
 * takes it from its pool and opens a new one. Backends idle for long (load gone) are closed by
 * PostgreSQL itself (idle_session_timeout on the gateway's login).
 */
export interface BackendRecycling {
  /** A backend of the gateway older than this (seconds) is replaced once it is idle. */
  maxAgeSeconds: number;
  /** How often the engine replaces one (seconds, 1–59: a pg_cron seconds schedule). */
  everySeconds: number;
  /** A backend idle this long (seconds) is closed by PostgreSQL. */
  idleSeconds: number;
}

/**
 * Ten minutes of growth (~10 MB) per backend at most; one replaced every 10 s keeps up with up to
 * 60 backends; an idle server gives its backends back after 5 minutes.
 */
export const DEFAULT_BACKEND_RECYCLING: BackendRecycling = {
  maxAgeSeconds: 600,
  everySeconds: 10,
  idleSeconds: 300,
};

export const RECYCLE_JOB = 'fhir_recycle_gateway_backends';
/**
 * The application_name of the gateway's data pool connections (pg_stat_activity): the 0.108
 * gateway names its pool `Data`, the 0.112 gateway `UserData`.
 */
export const GATEWAY_DATA_APPLICATIONS = ['DocumentDBGateway-Data', 'DocumentDBGateway-UserData'] as const;

/** SQL condition on pg_stat_activity's `application_name` (column `column`) matching either pool name. */
export function isGatewayDataPool(column: string): string {
  return `${column} IN (${GATEWAY_DATA_APPLICATIONS.map((name) => `'${name}'`).join(', ')})`;
}

function checked(r: BackendRecycling): BackendRecycling {
  const whole = (n: number, min: number, max: number) => Number.isInteger(n) && n >= min && n <= max;
  if (!whole(r.maxAgeSeconds, 1, 86_400 * 30)) throw new Error(`maxAgeSeconds: ${r.maxAgeSeconds}`);
  if (!whole(r.everySeconds, 1, 59)) throw new Error(`everySeconds must be 1–59: ${r.everySeconds}`);
  if (!whole(r.idleSeconds, 1, 86_400 * 30)) throw new Error(`idleSeconds: ${r.idleSeconds}`);
  return r;
}

/**
 * SQL (run as the superuser in the cron database, at every start: idempotent) that sets up the
 * recycling for the gateway's login `role` (a name the engine chose, not user input).
 */
export function backendRecyclingSql(role: string, recycling: BackendRecycling): string {
  if (!/^\w+$/.test(role)) throw new Error(`role: ${role}`);
  const r = checked(recycling);
  // Idle outside a transaction, no snapshot and no relation lock: nothing of a request is open on
  // it. Nor a cursor: the gateway pins a cursor of more than one batch to the backend that served
  // its first page (persistConnection), which then sits idle with that page's call as its last
  // statement until the next getMore; closing it loses the cursor (CursorNotFound). Every cursor
  // call of the gateway names a `…cursor…` function, other requests end with other statements.
  const job = [
    'SELECT pg_terminate_backend(expired.pid) FROM (',
    'SELECT a.pid FROM pg_stat_activity a',
    `WHERE a.usename = '${role}' AND ${isGatewayDataPool('a.application_name')}`,
    "AND a.state = 'idle' AND a.backend_xid IS NULL AND a.backend_xmin IS NULL",
    `AND a.backend_start < now() - interval '${r.maxAgeSeconds} seconds'`,
    "AND NOT EXISTS (SELECT 1 FROM pg_locks l WHERE l.pid = a.pid AND l.locktype = 'relation')",
    "AND a.query NOT ILIKE '%cursor%'",
    'ORDER BY a.state_change DESC LIMIT 1) expired;',
    // pg_cron records every run: keep this job's last hour only
    "DELETE FROM cron.job_run_details WHERE end_time < now() - interval '1 hour'",
    `AND jobid IN (SELECT jobid FROM cron.job WHERE jobname = '${RECYCLE_JOB}')`,
  ].join(' ');
  return [
    `ALTER ROLE "${role}" SET idle_session_timeout = '${r.idleSeconds}s'`,
    `SELECT cron.schedule('${RECYCLE_JOB}', '${r.everySeconds} seconds', $job$${job}$job$)`,
  ].join('; ');
}
