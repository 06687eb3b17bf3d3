/**
 * What a request's log line says about the error behind a 5xx answer: its class and message
 * (`detail`, not `message`: pino's error serializer would take an object with a `message` for an
 * error and log its constructor, `Object`, as the type).
 */
export interface LoggableError {
  type: string;
  detail: string;
  /** The error it wraps (a driver error carries the network or server error that caused it). */
  cause?: LoggableError;
}

/** Long enough for a driver's message, short enough that no document rides along. */
const MAX_MESSAGE = 300;

/**
 * The class and message of an error, and of what it wraps, for an operator reading a 503 or 500 log
 * line: never its stack, its other properties (a driver error may carry a query or a document), a
 * body, or a password written in a connection string.
 */
export function loggableError(err: unknown, depth = 0): LoggableError {
  if (!(err instanceof Error)) return { type: typeof err, detail: '' };
  const detail = err.message.replace(/(\w+:\/\/)[^/@\s]*@/g, '$1[redacted]@').slice(0, MAX_MESSAGE);
  const e = err as Error & { cause?: unknown; errorResponse?: unknown };
  const inner = [e.cause, e.errorResponse].find((c) => c instanceof Error);
  return {
    type: err.constructor?.name && err.constructor.name !== 'Error' ? err.constructor.name : err.name,
    detail,
    ...(inner && depth < 3 ? { cause: loggableError(inner, depth + 1) } : {}),
  };
}
