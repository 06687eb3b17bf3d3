import { isUtf8 } from 'buffer';
import type { IncomingMessage } from 'http';
import type { NextFunction, Request, Response } from 'express';
import { OperationOutcomeError } from '@app/fhir';
import { isFhirPath } from '../fhir-http/fhir-route-state';

/**
 * Body checks that hold for every request before any route sees it (docs/security.md):
 * bytes that are not UTF-8 are refused rather than decoded into U+FFFD, and FHIR strings keep to
 * https://hl7.org/fhir/R4/datatypes.html#string: no characters below U+0020 but tab, CR and LF,
 * and (JSON escapes can make them) no lone surrogates, which UTF-8 cannot store.
 */

/** A body that is not what its charset says: 400, never silently repaired. */
export class BadEncodingError extends Error {
  readonly status = 400;
  readonly type = 'encoding.invalid';
  constructor(message: string) {
    super(message);
  }
}

/** body-parser `verify`: the raw bytes of a UTF-8 body must be UTF-8 (body-parser would replace them). */
export function verifyUtf8(_req: IncomingMessage, _res: unknown, buf: Buffer, encoding: string): void {
  if (/^utf-?8$/i.test(encoding) && !isUtf8(buf)) {
    throw new BadEncodingError('the request body is not valid UTF-8; nothing was read');
  }
}

// eslint-disable-next-line no-control-regex -- finding control characters is the point
const CONTROL = /[\u0000-\u0008\u000B\u000C\u000E-\u001F]/;
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** Why `value` is not a valid FHIR string, or undefined when it is. */
export function fhirStringProblem(value: string): string | undefined {
  return controlProblem(value, CONTROL) ?? surrogateProblem(value);
}

/** No control character at all (identifiers such as app_user_id, which also travel in headers). */
// eslint-disable-next-line no-control-regex -- finding control characters is the point
const ANY_CONTROL = /[\u0000-\u001F\u007F]/;

export function identifierProblem(value: string): string | undefined {
  return controlProblem(value, ANY_CONTROL) ?? surrogateProblem(value);
}

function controlProblem(value: string, pattern: RegExp): string | undefined {
  const control = pattern.exec(value);
  if (!control) return undefined;
  const code = control[0].charCodeAt(0).toString(16).toUpperCase().padStart(4, '0');
  const allowed = pattern === CONTROL ? ' (only tab, CR and LF are allowed below U+0020)' : '';
  return `contains the control character U+${code} at position ${control.index}${allowed}`;
}

function surrogateProblem(value: string): string | undefined {
  return LONE_SURROGATE.test(value)
    ? 'contains a lone UTF-16 surrogate (not a Unicode character)'
    : undefined;
}

/** Why one node of a parsed JSON body is refused: a bad string, or an array over the limit. */
function nodeProblem(value: unknown, maxArrayLength: number): string | undefined {
  if (typeof value === 'string') return fhirStringProblem(value);
  if (Array.isArray(value) && value.length > maxArrayLength)
    return `repeats ${value.length} times; at most ${maxArrayLength} (MAX_ARRAY_LENGTH) are accepted`;
  return undefined;
}

/** Whether any node or property name of a parsed JSON body is refused: one walk, no recursion, no paths. */
function anyProblem(body: unknown, maxArrayLength: number): boolean {
  const stack: unknown[] = [body];
  while (stack.length > 0) {
    const value = stack.pop();
    if (nodeProblem(value, maxArrayLength) !== undefined) return true;
    if (Array.isArray(value)) for (const item of value) stack.push(item);
    else if (value !== null && typeof value === 'object') {
      for (const [key, child] of Object.entries(value as Record<string, unknown>)) {
        if (fhirStringProblem(key) !== undefined) return true;
        stack.push(child);
      }
    }
  }
  return false;
}

/**
 * The first refused node (bad string value or property name, over-long array) of a parsed JSON
 * body, with its path. Paths are built only for a body that has one (a second walk), so a good
 * body costs one plain walk.
 */
export function firstBadNode(
  body: unknown,
  root: string,
  maxArrayLength = Number.MAX_SAFE_INTEGER,
): { path: string; problem: string } | undefined {
  if (!anyProblem(body, maxArrayLength)) return undefined;
  const stack: Array<[unknown, string]> = [[body, root]];
  while (stack.length > 0) {
    const [value, path] = stack.pop()!;
    const problem = nodeProblem(value, maxArrayLength);
    if (problem) return { path, problem };
    if (Array.isArray(value)) {
      for (let i = value.length - 1; i >= 0; i--) stack.push([value[i], `${path}[${i}]`]);
    } else if (value !== null && typeof value === 'object') {
      const entries = Object.entries(value as Record<string, unknown>);
      for (let i = entries.length - 1; i >= 0; i--) {
        const [key, child] = entries[i];
        const keyProblem = fhirStringProblem(key);
        if (keyProblem) return { path: `${path} (a property name)`, problem: keyProblem };
        stack.push([child, `${path}.${key}`]);
      }
    }
  }
  return undefined;
}

/** Limits on what one stored resource may be (one tenant's data must not slow the others). */
export interface ResourceLimits {
  maxResourceBytes: number;
  maxArrayLength: number;
}

/**
 * Bytes of each resource a body would store: the body itself, or each entry of a Bundle. A Bundle
 * whose whole body is within `maxResourceBytes` has no entry to measure: each entry, written out
 * again, is no longer than its part of the body (but for a number in exponent form, which the
 * stored-form check of write-protocol.ts `buildDoc` meets), and a typical bundle is far below the
 * limit, so its entries are not serialised twice.
 */
function resourceSizes(
  req: Request,
  body: Record<string, unknown>,
  maxResourceBytes: number,
): Array<[string, number]> {
  const sent = Number(req.headers['content-length']);
  if (body.resourceType === 'Bundle' && Array.isArray(body.entry)) {
    if (sent <= maxResourceBytes) return [];
    return body.entry.map((entry: unknown, i): [string, number] => {
      const resource = (entry as { resource?: unknown } | null)?.resource;
      return [`Bundle.entry[${i}].resource`, resource ? Buffer.byteLength(JSON.stringify(resource)) : 0];
    });
  }
  const length = Number.isNaN(sent) ? Buffer.byteLength(JSON.stringify(body)) : sent;
  return [[typeof body.resourceType === 'string' ? body.resourceType.slice(0, 64) : '$', length]];
}

/** 413 for a resource over MAX_RESOURCE_BYTES (`subject` names it: a type, a bundle entry path). */
export function tooLargeError(
  subject: string,
  bytes: number,
  maxResourceBytes: number,
): OperationOutcomeError {
  return new OperationOutcomeError(
    'too-long',
    `${subject} is ${bytes} bytes; one resource may be at most ${maxResourceBytes} (MAX_RESOURCE_BYTES); nothing was stored`,
    { status: 413 },
  );
}

/** 400 naming the first bad string or over-long array of `body` (paths from `root`), if any. */
export function badNodeError(
  body: unknown,
  root: string,
  maxArrayLength: number,
): OperationOutcomeError | undefined {
  const bad = firstBadNode(body, root, maxArrayLength);
  if (!bad) return undefined;
  // the path is made of the sender's property names: bounded, so the answer stays small
  const path = bad.path.length > 200 ? `${bad.path.slice(0, 200)}…` : bad.path;
  return OperationOutcomeError.invalid(`${path} ${bad.problem}; nothing was stored`, path);
}

/**
 * Middleware after the body parsers, for FHIR routes' JSON bodies: a resource over
 * MAX_RESOURCE_BYTES → 413, an array over MAX_ARRAY_LENGTH or a bad string → 400 (OperationOutcome).
 */
export function fhirBodyGuard(limits: ResourceLimits) {
  return (req: Request, _res: Response, next: NextFunction): void => {
    const body: unknown = req.body;
    if (body === null || typeof body !== 'object' || Array.isArray(body) || !isFhirPath(req.path))
      return next();
    for (const [path, bytes] of resourceSizes(
      req,
      body as Record<string, unknown>,
      limits.maxResourceBytes,
    )) {
      if (bytes > limits.maxResourceBytes) return next(tooLargeError(path, bytes, limits.maxResourceBytes));
    }
    const rootName = (body as { resourceType?: unknown }).resourceType;
    const root = typeof rootName === 'string' ? rootName.slice(0, 64) : '$';
    next(badNodeError(body, root, limits.maxArrayLength));
  };
}
