import type { IncomingMessage, ServerResponse } from 'http';
import { performance } from 'node:perf_hooks';
import { Injectable } from '@nestjs/common';
import { analyseNarrativeInSlices } from '@app/fhir';
import { ClientConcurrency } from './client-concurrency';
import { FairPool, type PoolTurn } from './fair-pool';
import type { TenantContext } from '../tenancy/tenant-context';
import { KnownCredentials, type KnownCaller } from './known-credentials';

type Next = (error?: unknown) => void;
type Handler = (req: IncomingMessage, res: ServerResponse, next: Next) => void;
type Verify = (req: IncomingMessage, res: ServerResponse, body: Buffer, encoding: string) => void;

/** What one request has spent on the event loop, and whom it is charged to. */
interface RequestLoop {
  /** Spent before its caller was known: charged once admission knows it. */
  pendingMs: number;
  /** Its body's bytes, read before its caller was known: charged once admission knows it. */
  pendingBytes: number;
  /** When the body parser started parsing its body (its `verify` runs right before). */
  parseStarted?: number;
  /** Its caller: known credentials, or admission's; null when looked for and not known. */
  caller?: Pick<KnownCaller, 'clientId' | 'user'> | null;
}

/**
 * Runs `step` (a synchronous walk of a request's resource after admission: its validation) and
 * charges its event-loop time to the caller's share (TenantContext.chargeLoopMs), as the body's
 * parse before it was: a stored resource patched, or a bundle's entries, are walked again there.
 */
export function timedOnLoop<T>(caller: Pick<TenantContext, 'chargeLoopMs'> | undefined, step: () => T): T {
  if (!caller?.chargeLoopMs) return step();
  const started = performance.now();
  try {
    return step();
  } finally {
    caller.chargeLoopMs(performance.now() - started);
  }
}

/**
 * Runs `run`, an asynchronous step whose only waits are its calls of `awaited` (a FHIRPath Patch
 * waiting for the worker pool), and charges to the caller's share only its synchronous parts: from
 * its start to its first call of `awaited`, from each answer to the next call, from the last answer
 * to its end. The time spent waiting for `awaited` holds no event loop and is not charged (the
 * worker's time is charged as worker ms where it runs).
 */
export async function timedOnLoopBetween<A extends unknown[], R, T>(
  caller: Pick<TenantContext, 'chargeLoopMs'> | undefined,
  awaited: (...args: A) => Promise<R>,
  run: (timed: (...args: A) => Promise<R>) => Promise<T>,
): Promise<T> {
  if (!caller?.chargeLoopMs) return run(awaited);
  let spent = 0;
  let started: number | undefined = performance.now();
  const pause = () => {
    if (started === undefined) return;
    spent += performance.now() - started;
    started = undefined;
  };
  const timed = async (...args: A): Promise<R> => {
    pause();
    try {
      return await awaited(...args);
    } finally {
      started = performance.now();
    }
  };
  try {
    return await run(timed);
  } finally {
    pause();
    caller.chargeLoopMs(spent);
  }
}

/** Resolves in a later turn of the event loop: I/O that waits (another tenant's request) runs first. */
export const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

/**
 * Runs `step` on each of `items` in order, each in a turn of the event loop of its own, and charges
 * each step's time to the caller's share (timedOnLoop). A bundle's entries are each validated and
 * built into a stored document (placeholders rewritten, search index extracted) synchronously: the
 * 20 of a transaction in one piece held the loop for milliseconds while every other tenant's
 * request waited behind the whole bundle; taken in turns, they wait behind one entry at most.
 */
export async function inTurns<T, R>(
  caller: Pick<TenantContext, 'chargeLoopMs'> | undefined,
  items: readonly T[],
  step: (item: T, index: number) => R,
): Promise<R[]> {
  const results: R[] = [];
  for (const [index, item] of items.entries()) {
    await nextTurn();
    results.push(timedOnLoop(caller, () => step(item, index)));
  }
  return results;
}

/**
 * Event-loop time as a unit of the cost budget (docs/security.md "The cost budget", CostUnit
 * `loopMs`, CLIENT_LOOP_MS_PER_SECOND). The one event loop serves every tenant, and a request's
 * synchronous steps hold it for everyone: its body's JSON parse (up to BODY_LIMIT), the body guard's
 * walk, its long narratives' parse. Each step is timed where it runs and charged to the request's
 * caller (client, and user within it) as ClientConcurrency charges database and worker time: while
 * another caller is active, past the share → 429 before its next request is parsed (the early
 * refusal knows its credentials). These steps run ahead of the route guard, before admission has
 * verified the caller: time spent for credentials verified lately (KnownCredentials) is charged at
 * once, the rest when admission verifies them (FhirAdmission.admit).
 *
 * Long narratives are parsed in slices (narratives-in-slices.ts): at most one slice of all requests
 * together runs per turn of the event loop, given fairly among callers (FairPool of one: the least
 * recent use first), so a flood of them adds one slice to another tenant's wait, not one slice per
 * request in flight; between two slices a caller past its share is stopped with the 429.
 */
@Injectable()
export class EventLoopTime {
  private readonly requests = new WeakMap<IncomingMessage, RequestLoop>();
  private readonly slices = new FairPool({
    name: 'narrative slices',
    capacity: 1,
    // waiters are requests in flight, bounded by the connections the server accepts
    maxQueue: Number.MAX_SAFE_INTEGER,
    maxQueueSetting: 'none',
  });

  constructor(
    private readonly concurrency: ClientConcurrency,
    private readonly credentials: KnownCredentials,
  ) {}

  /**
   * A body parser whose parse is charged: `build` gets the parser's `verify` option (wrapping
   * `verify`), which body-parser calls right before it parses; the parser's callback comes right
   * after the parse, in the same turn.
   */
  timedBodyParser(build: (verify: Verify) => Handler, verify: Verify): Handler {
    const parser = build((req, res, body, encoding) => {
      // its bytes were read and decoded on the loop before the parse: charged as bytes (below)
      this.spendBytes(req, body.length);
      this.of(req).parseStarted = performance.now();
      verify(req, res, body, encoding);
    });
    return (req, res, next) =>
      parser(req, res, (error) => {
        const loop = this.requests.get(req);
        if (loop?.parseStarted !== undefined) {
          this.spend(req, performance.now() - loop.parseStarted);
          loop.parseStarted = undefined;
        }
        next(error);
      });
  }

  /**
   * A middleware that runs synchronously on a parsed body (the body guard's walk), its time charged
   * on requests whose body a timed parser parsed (a request without one costs it nothing).
   */
  timedStep<Req extends IncomingMessage, Res extends ServerResponse>(
    step: (req: Req, res: Res, next: Next) => void,
  ): (req: Req, res: Res, next: Next) => void {
    return (req, res, next) => {
      if (!this.requests.has(req)) return step(req, res, next);
      const started = performance.now();
      step(req, res, (error) => {
        this.spend(req, performance.now() - started);
        next(error);
      });
    };
  }

  /**
   * Parses `divs` (long narratives of the request's body) in slices, one slice of all requests per
   * turn of the loop; rejects with the 429 of a caller past its share between two slices.
   */
  async narrativesInSlices(req: IncomingMessage, divs: readonly string[]): Promise<void> {
    const key = this.callerOf(req)?.clientId ?? '';
    let turn: PoolTurn | undefined;
    let started = 0;
    const take = async () => {
      turn = await this.slices.enter(key);
      // the slice runs in a turn of its own: whatever else waits (I/O) runs in between
      await nextTurn();
      started = performance.now();
    };
    const giveBack = () => {
      if (!turn) return;
      const ms = performance.now() - started;
      turn.release(ms);
      turn = undefined;
      this.spend(req, ms);
    };
    try {
      await take();
      for (const div of divs) {
        await analyseNarrativeInSlices(div, async () => {
          giveBack();
          const refused = this.refusalOf(req);
          if (refused) throw refused;
          await take();
        });
      }
    } finally {
      giveBack();
    }
  }

  /**
   * Admission verified the request's caller: what it spent before is charged now, and what it
   * spends from now on as it is spent.
   */
  admitted(req: IncomingMessage, clientId: string, user: string): void {
    // a request that spent nothing yet (no body) gets no entry: a later spend finds its caller by its credentials
    const loop = this.requests.get(req);
    if (loop === undefined) return;
    loop.caller = { clientId, user };
    if (loop.pendingMs > 0) this.concurrency.chargeWork(clientId, user, 'loopMs', loop.pendingMs);
    if (loop.pendingBytes > 0) this.concurrency.chargeWork(clientId, user, 'bytes', loop.pendingBytes);
    loop.pendingMs = 0;
    loop.pendingBytes = 0;
  }

  /**
   * Charges a body's bytes to the request's caller's byte share (while another caller contends, as
   * work), or keeps them until admission knows the caller. The loop reads a body off its socket
   * chunk by chunk and decodes it before any timed step runs, and its cost grows with its size as
   * an answer's does: a flood of 224 KB bodies was charged about two thirds of the loop time it took.
   */
  spendBytes(req: IncomingMessage, bytes: number): void {
    if (!(bytes > 0)) return;
    const caller = this.callerOf(req);
    if (caller) this.concurrency.chargeWork(caller.clientId, caller.user, 'bytes', bytes);
    else this.of(req).pendingBytes += bytes;
  }

  /** Charges `ms` of the loop to the request's caller, or keeps it until admission knows the caller. */
  spend(req: IncomingMessage, ms: number): void {
    if (!(ms > 0)) return;
    const caller = this.callerOf(req);
    if (caller) this.concurrency.chargeWork(caller.clientId, caller.user, 'loopMs', ms);
    else this.of(req).pendingMs += ms;
  }

  /** The 429 the request's caller (when known) gets now: its share spent, or its in-flight cap. */
  private refusalOf(req: IncomingMessage) {
    const caller = this.callerOf(req);
    return caller ? this.concurrency.refusal(caller.clientId, caller.user) : undefined;
  }

  private callerOf(req: IncomingMessage): RequestLoop['caller'] {
    const loop = this.of(req);
    if (loop.caller === undefined) loop.caller = this.credentials.callerOf(req) ?? null;
    return loop.caller;
  }

  private of(req: IncomingMessage): RequestLoop {
    let loop = this.requests.get(req);
    if (!loop) this.requests.set(req, (loop = { pendingMs: 0, pendingBytes: 0 }));
    return loop;
  }
}
