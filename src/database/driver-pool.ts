import type { Settings } from '../config/settings';

/**
 * Connections a request of an admission lane may use at once: a page and its total, a history
 * page and its count, `$everything`'s types are read side by side (Promise.all).
 */
const CONNECTIONS_PER_REQUEST = 2;
/**
 * Room beside the lanes for what runs outside them: bulk export downloads and kick-offs, purge,
 * token and user routes, the directory, liveness probes.
 */
const OUTSIDE_LANES = 16;
/**
 * Never fewer (the size before it was derived from the lanes): work outside the lanes may fan out
 * wider for a moment (the query-plan suite explains every hot query at once).
 */
const MIN_POOL = 50;
/** A driver connection unused this long is closed (the pool opens one again when it needs it). */
const MAX_IDLE_MS = 60_000;

/**
 * The driver's pool, sized from the admission lanes (src/admission/request-admission.ts) so that
 * requests admitted never wait for a connection however the lanes are set. It caps the operations
 * in flight: on DocumentDB each holds a PostgreSQL backend of the gateway, whose memory is the
 * database's largest part (docs/memory.md); on MongoDB each connection costs the server a thread
 * and about 1 MB. Idle connections are closed after a burst instead of held for good.
 */
export function driverPoolOptions(
  settings: Pick<Settings, 'serverMaxConcurrentReads' | 'serverMaxConcurrentWrites'>,
): { maxPoolSize: number; minPoolSize: number; maxIdleTimeMS: number } {
  const lanes = settings.serverMaxConcurrentReads + settings.serverMaxConcurrentWrites;
  return {
    maxPoolSize: Math.max(MIN_POOL, CONNECTIONS_PER_REQUEST * lanes + OUTSIDE_LANES),
    minPoolSize: 0,
    maxIdleTimeMS: MAX_IDLE_MS,
  };
}
