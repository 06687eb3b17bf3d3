import type { NextFunction, Request, Response } from 'express';
import { isFhirPath } from '../fhir-http/fhir-route-state';
import type { EventLoopTime } from './event-loop-time';

/** Narratives at least this long are parsed in slices ahead of routing (shorter ones take < 1 ms). */
export const SLICED_NARRATIVE_MIN_CHARS = 32_768;

/**
 * A legal narrative may be as long as a resource (MAX_RESOURCE_BYTES): checking 1 MB of XHTML in
 * one piece held the event loop ~0.2–0.5 s, and every other tenant's request waited. Runs after the
 * body parser on FHIR routes: every long `<div …>` string of the body (a resource's text.div, in a
 * Bundle, a Parameters, a JSON Patch value) is parsed in slices with turns of the event loop
 * between them (analyseNarrativeInSlices), and the validation that follows finds the result. The
 * narrative rules stay in one place (libs/fhir narrative.ts). The slices' turns and the charge of
 * their time to the caller are EventLoopTime's. A request without credentials is answered 401
 * before any validation and is not parsed here.
 */
export function narrativesInSlices(loop: EventLoopTime) {
  return (req: Request, _res: Response, next: NextFunction): void => {
    const body: unknown = req.body;
    if (body === null || typeof body !== 'object' || !isFhirPath(req.path) || !carriesCredentials(req))
      return next();
    const divs = longNarratives(body);
    if (divs.length === 0) return next();
    loop.narrativesInSlices(req, divs).then(() => next(), next);
  };
}

function carriesCredentials(req: Request): boolean {
  return req.headers.authorization !== undefined || req.headers.client_secret !== undefined;
}

/** Every string of the body that starts like a narrative and is long enough to be sliced. */
function longNarratives(body: object): string[] {
  const found: string[] = [];
  const stack: unknown[] = [body];
  while (stack.length > 0) {
    const node = stack.pop();
    if (typeof node === 'string') {
      if (node.length >= SLICED_NARRATIVE_MIN_CHARS && node.startsWith('<div')) found.push(node);
    } else if (Array.isArray(node)) {
      for (const item of node) if (typeof item === 'object' || typeof item === 'string') stack.push(item);
    } else if (node !== null && typeof node === 'object') {
      for (const value of Object.values(node)) {
        if (typeof value === 'object' || typeof value === 'string') stack.push(value);
      }
    }
  }
  return found;
}
