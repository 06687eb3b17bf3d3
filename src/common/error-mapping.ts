import { HttpException } from '@nestjs/common';
import {
  issue,
  IssueCode,
  operationOutcome,
  OperationOutcomeError,
  outcomeIn,
  type FhirVersion,
  type OperationOutcome,
} from '@app/fhir';
import { embeddedDatabaseRecovering } from '../database/documentdb-supervisor';
import { isDuplicateKey } from '../storage/duplicate-key';

/** The one place that turns anything thrown into (status, FHIR issue code, message, headers). */
export interface MappedError {
  status: number;
  code: IssueCode;
  message: string;
  /** Body to send verbatim on non-FHIR routes (e.g. RFC 6749 token errors). */
  body?: Record<string, unknown>;
  headers: Record<string, string>;
  /** True for errors that are our fault: logged with their stack. */
  internal: boolean;
}

const CODE_BY_STATUS: Record<number, IssueCode> = {
  400: 'invalid',
  401: 'login',
  403: 'forbidden',
  404: 'not-found',
  405: 'not-supported',
  406: 'not-supported',
  409: 'conflict',
  410: 'deleted',
  412: 'conflict',
  413: 'too-long',
  414: 'too-long',
  415: 'not-supported',
  422: 'processing',
  429: 'throttled',
  503: 'transient',
  504: 'timeout',
};

/** Errors from the MongoDB driver that mean "the database is not reachable right now". */
const UNAVAILABLE = new Set([
  'MongoServerSelectionError',
  'MongoNetworkError',
  'MongoNetworkTimeoutError',
  'MongoNotConnectedError',
  'MongoTopologyClosedError',
  'MongoPoolClearedError',
  'MongooseServerSelectionError',
]);

function isDbUnavailable(err: Error, depth = 0): boolean {
  if (UNAVAILABLE.has(err.name)) return true;
  // A bulk write cut off by a lost connection is a MongoBulkWriteError carrying the network error.
  const e = err as Error & { errorResponse?: unknown; cause?: unknown };
  for (const inner of [e.errorResponse, e.cause]) {
    if (depth < 3 && inner instanceof Error && isDbUnavailable(inner, depth + 1)) return true;
  }
  // Mongoose with bufferCommands=false throws a plain MongooseError when not connected.
  return (
    err.name === 'MongooseError' &&
    /not connected|buffering timed out|Client must be connected/i.test(err.message)
  );
}

/**
 * PostgreSQL's own words for a server that is going away or not back yet (admin_shutdown 57P01,
 * cannot_connect_now 57P03, a refused or cut connection), should the gateway pass them on.
 */
const POSTGRES_RESTARTING =
  /terminating connection due to administrator command|the database system is (starting up|in recovery|shutting down|not yet accepting connections)|server closed the connection unexpectedly|could not connect to server|connection to server .* failed|Connection refused/i;

/**
 * The gateway lost its PostgreSQL: it answers a generic InternalError (code 1), or passes on
 * PostgreSQL's words. The generic error counts only while this process's supervisor restarts the
 * embedded database (or just did); at any other time it is a real fault and stays a 500.
 */
function engineRestarting(err: Error, depth = 0): boolean {
  const e = err as Error & { errorResponse?: unknown; cause?: unknown };
  if (err.name === 'MongoServerError' || err.name === 'MongoBulkWriteError') {
    if (POSTGRES_RESTARTING.test(err.message)) return true;
    if (genericGatewayError(err) && embeddedDatabaseRecovering()) return true;
  }
  for (const inner of [e.errorResponse, e.cause]) {
    if (depth < 3 && inner instanceof Error && engineRestarting(inner, depth + 1)) return true;
  }
  return false;
}

function genericGatewayError(err: Error): boolean {
  const e = err as Error & { code?: unknown; codeName?: unknown };
  return e.code === 1 && e.codeName === 'InternalError';
}

/**
 * A generic gateway error while the embedded database is not (yet) known to be down: the gateway
 * can answer within milliseconds of PostgreSQL's death, while the dying postmaster is neither a
 * zombie nor reaped yet, before this process can tell. The one error filter then waits briefly
 * for the supervisor's verdict (`embeddedDatabaseVerdict`) before mapping it: 503 if it was a
 * restart, still 500 if not. Rare (only a generic engine error pays the wait), so nothing else slows.
 */
export function awaitsEngineVerdict(err: unknown, depth = 0): boolean {
  if (!(err instanceof Error) || embeddedDatabaseRecovering()) return false;
  if ((err.name === 'MongoServerError' || err.name === 'MongoBulkWriteError') && genericGatewayError(err))
    return true;
  const e = err as Error & { errorResponse?: unknown; cause?: unknown };
  return depth < 3 && [e.errorResponse, e.cause].some((inner) => awaitsEngineVerdict(inner, depth + 1));
}

/** The engine stopped a query at its maxTimeMS (MaxTimeMSExpired), or the driver's deadline ran out. */
function timedOut(err: Error, depth = 0): 'server' | 'client' | undefined {
  const e = err as Error & { code?: number; errorResponse?: unknown; cause?: unknown };
  if (e.code === 50) return 'server';
  if (err.name === 'MongoOperationTimeoutError') return 'client';
  for (const inner of [e.errorResponse, e.cause]) {
    const found = depth < 3 && inner instanceof Error ? timedOut(inner, depth + 1) : undefined;
    if (found) return found;
  }
  return undefined;
}

/**
 * The engine no longer holds a cursor the request was reading (CursorNotFound, code 43): closed
 * by its idle time-out or with the connection it was pinned to. Nothing of the request is half
 * done that a repetition would not finish, so the client may repeat it.
 */
function cursorLost(err: Error): boolean {
  return (err as Error & { code?: number }).code === 43;
}

/** Seconds a client should wait before retrying a 503. */
const RETRY_AFTER = '5';

/** A 503 the client may repeat after Retry-After: not our fault, not logged with a stack. */
function retryLater(code: IssueCode, message: string): MappedError {
  return { status: 503, code, message, headers: { 'Retry-After': RETRY_AFTER }, internal: false };
}

export function mapError(err: unknown): MappedError {
  if (err instanceof OperationOutcomeError) {
    const first = err.outcome.issue[0];
    return {
      status: err.status,
      code: first?.code ?? 'invalid',
      message: first?.diagnostics ?? err.message,
      headers: err.headers,
      internal: err.status >= 500 && err.status !== 503 && err.status !== 504,
    };
  }
  if (err instanceof HttpException) {
    const status = err.getStatus();
    const resp = err.getResponse();
    let message = err.message;
    let body: Record<string, unknown> | undefined;
    if (typeof resp === 'object' && resp !== null) {
      const r = resp as Record<string, unknown>;
      if (Array.isArray(r.message)) message = r.message.join('; ');
      else if (typeof r.message === 'string') message = r.message;
      if (typeof r.error === 'string' && !('statusCode' in r)) body = r;
    }
    const headers = (err as HttpException & { headers?: Record<string, string> }).headers ?? {};
    return {
      status,
      code: CODE_BY_STATUS[status] ?? 'invalid',
      message,
      body,
      headers,
      internal: status >= 500,
    };
  }
  if (err instanceof Error) {
    // body-parser errors carry a status and a type (JSON syntax, size, charset, content encoding)
    const e = err as Error & { status?: number; statusCode?: number; type?: string; code?: number };
    const status = e.status ?? e.statusCode;
    if (typeof status === 'number' && status >= 400 && status < 500) {
      const message =
        e.type === 'entity.parse.failed'
          ? `malformed JSON body: ${e.message}`
          : e.type === 'entity.too.large'
            ? 'request body is larger than the configured limit (BODY_LIMIT)'
            : e.message;
      return { status, code: CODE_BY_STATUS[status] ?? 'invalid', message, headers: {}, internal: false };
    }
    const timeout = timedOut(err);
    if (timeout) {
      // Issue 16: a query over its time limit, or a database that does not answer (stopped,
      // overloaded), costs this request DB_TIMEOUT_MS at most and answers 503, never 500.
      return timeout === 'server'
        ? retryLater(
            'too-costly',
            'the request needed more database time than one request may take; narrow it or retry later',
          )
        : retryLater('transient', 'the database did not answer in time (DB_TIMEOUT_MS); retry later');
    }
    if (isDbUnavailable(err)) return retryLater('transient', 'the database is not reachable; retry later');
    if (engineRestarting(err)) {
      return retryLater('transient', 'the database is restarting; retry later');
    }
    if (cursorLost(err)) {
      return retryLater(
        'transient',
        'the database closed a cursor before this request had read it to the end; retry',
      );
    }
    if (isDuplicateKey(e)) {
      return {
        status: 409,
        code: 'duplicate',
        message: 'a record with this key already exists',
        headers: {},
        internal: false,
      };
    }
    if (err.name === 'CastError' || err.name === 'ValidationError' || err.name === 'BSONError') {
      return { status: 400, code: 'invalid', message: err.message, headers: {}, internal: false };
    }
  }
  return { status: 500, code: 'exception', message: 'internal server error', headers: {}, internal: true };
}

/**
 * Anything thrown as the OperationOutcome a client is given, in the issue codes of its version:
 * the error filter's answer and a bundle entry's response (`mapped`: the error mapped already).
 */
export function outcomeOf(error: unknown, version: FhirVersion, mapped?: MappedError): OperationOutcome {
  if (error instanceof OperationOutcomeError) return outcomeIn(version, error.outcome);
  const { code, message } = mapped ?? mapError(error);
  return outcomeIn(version, operationOutcome([issue(code, message)]));
}
