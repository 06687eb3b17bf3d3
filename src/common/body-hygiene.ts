import { isUtf8 } from 'buffer';
import type { IncomingMessage } from 'http';
import type { NextFunction, Request, Response } from 'express';
import { OperationOutcomeError } from '@app/fhir';
import { isFhirRoute } from './fhir-routes';

/**
 * Body checks that hold for every request before any route sees it (issue 16 item 6):
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

const CONTROL = /[\u0000-\u0008\u000B\u000C\u000E-\u001F]/;
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** Why `value` is not a valid FHIR string, or undefined when it is. */
export function fhirStringProblem(value: string): string | undefined {
  const control = CONTROL.exec(value);
  if (control) {
    const code = control[0].charCodeAt(0).toString(16).toUpperCase().padStart(4, '0');
    return `contains the control character U+${code} at position ${control.index} (only tab, CR and LF are allowed below U+0020)`;
  }
  if (LONE_SURROGATE.test(value)) return 'contains a lone UTF-16 surrogate (not a Unicode character)';
  return undefined;
}

/** The first bad string (value or key) in a parsed JSON body, with its path; iterative, so depth is no risk. */
export function firstBadString(body: unknown, root: string): { path: string; problem: string } | undefined {
  const stack: Array<[unknown, string]> = [[body, root]];
  while (stack.length > 0) {
    const [value, path] = stack.pop()!;
    if (typeof value === 'string') {
      const problem = fhirStringProblem(value);
      if (problem) return { path, problem };
    } else if (Array.isArray(value)) {
      for (let i = value.length - 1; i >= 0; i--) stack.push([value[i], `${path}[${i}]`]);
    } else if (value !== null && typeof value === 'object') {
      const entries = Object.entries(value as Record<string, unknown>);
      for (let i = entries.length - 1; i >= 0; i--) {
        const [key, child] = entries[i];
        const problem = fhirStringProblem(key);
        if (problem) return { path: `${path} (a property name)`, problem };
        stack.push([child, `${path}.${key}`]);
      }
    }
  }
  return undefined;
}

/** Middleware after the body parsers: a FHIR route's JSON body with a bad string → 400 OperationOutcome. */
export function fhirStringsGuard(req: Request, _res: Response, next: NextFunction): void {
  const body: unknown = req.body;
  if (body === null || typeof body !== 'object' || !isFhirRoute(req.path)) return next();
  const rootName = (body as { resourceType?: unknown }).resourceType;
  const bad = firstBadString(body, typeof rootName === 'string' ? rootName.slice(0, 64) : '$');
  if (!bad) return next();
  // the path is made of the sender's property names: bounded, so the answer stays small
  bad.path = bad.path.length > 200 ? `${bad.path.slice(0, 200)}…` : bad.path;
  next(OperationOutcomeError.invalid(`${bad.path} ${bad.problem}; nothing was stored`, bad.path));
}
