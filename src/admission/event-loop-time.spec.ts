import type { IncomingMessage, ServerResponse } from 'http';
import type { OperationOutcomeError } from '@app/fhir';
import { NARRATIVE_SLICE_CHARS } from '@app/fhir/validation/narrative';
import type { Settings } from '../config/settings';
import { ClientConcurrency } from './client-concurrency';
import { EventLoopTime, inTurns, timedOnLoop, timedOnLoopBetween } from './event-loop-time';
import { KnownCredentials } from './known-credentials';

const XHTML = 'http://www.w3.org/1999/xhtml';
let made = 0;
/** A legal narrative of `slices` slices, different from every other (sliced results are kept). */
const narrative = (slices: number) => {
  const head = `<div xmlns="${XHTML}"><p>${made++}</p>`;
  const paragraphs = Math.ceil((slices * NARRATIVE_SLICE_CHARS - head.length) / 8);
  return `${head}${'<p>x</p>'.repeat(paragraphs)}</div>`;
};
const slicesOf = (div: string) => Math.ceil(div.length / NARRATIVE_SLICE_CHARS);
const request = (token: string) => ({ headers: { authorization: `Bearer ${token}` } }) as IncomingMessage;

function parts(loopMsPerSecond: number, bytesPerSecond = 0) {
  const concurrency = new ClientConcurrency({
    clientMaxConcurrentRequests: 16,
    clientResponseBytesPerSecond: bytesPerSecond,
    clientLoopMsPerSecond: loopMsPerSecond,
  } as Settings);
  const credentials = new KnownCredentials();
  return { concurrency, credentials, loop: new EventLoopTime(concurrency, credentials) };
}

function refusalOf(fn: () => unknown): OperationOutcomeError | undefined {
  try {
    fn();
  } catch (error) {
    return error as OperationOutcomeError;
  }
  return undefined;
}

describe('EventLoopTime', () => {
  it('time spent before the caller is known is charged when admission knows it, while another caller is active; past the share → 429 naming CLIENT_LOOP_MS_PER_SECOND', () => {
    const { concurrency, loop } = parts(10);
    const req = request('unknown');
    concurrency.acquire('c2').release(); // another client active
    loop.spend(req, 500);
    expect(refusalOf(() => concurrency.acquire('c1').release())).toBeUndefined();
    loop.admitted(req, 'c1', 'u1');
    const refused = refusalOf(() => concurrency.acquire('c1', 'u1'));
    expect(refused).toMatchObject({ status: 429 });
    expect(refused!.message).toMatch(/ms of event-loop time per second \(CLIENT_LOOP_MS_PER_SECOND\)/);
    expect(Number(refused!.headers?.['Retry-After'])).toBeGreaterThan(1);
  });

  it('time spent for credentials verified lately is charged at once, and only once', () => {
    const { concurrency, credentials, loop } = parts(10);
    const req = request('known');
    credentials.remember(req, 'c1', 'u1');
    concurrency.acquire('c2').release();
    loop.spend(req, 8); // within the burst (10)
    loop.admitted(req, 'c1', 'u1'); // nothing kept: nothing charged again
    expect(concurrency.refusal('c1', 'u1')).toBeUndefined();
    loop.spend(req, 8);
    expect(concurrency.refusal('c1', 'u1')?.status).toBe(429);
  });

  it('a client alone on the server is never charged (work-conserving)', () => {
    const { concurrency, loop } = parts(10);
    const req = request('alone');
    loop.spend(req, 5_000);
    loop.admitted(req, 'c1', '');
    expect(concurrency.refusal('c1', '')).toBeUndefined();
  });

  it('runs one slice of all requests per turn of the event loop', async () => {
    const { loop } = parts(0);
    const divs = Array.from({ length: 4 }, () => narrative(6));
    let done = false;
    let turns = 0;
    const probe = (async () => {
      while (!done) {
        await new Promise((resolve) => setImmediate(resolve));
        turns += 1;
      }
    })();
    await Promise.all(divs.map((div, i) => loop.narrativesInSlices(request(`r${i}`), [div])));
    done = true;
    await probe;
    const slices = divs.reduce((sum, div) => sum + slicesOf(div), 0);
    // one slice per turn: the probe saw a turn for each of them; one slice per request per turn
    // (each request slicing on its own) would have taken about a quarter of these turns
    expect(turns).toBeGreaterThanOrEqual(slices - 1);
  });

  it('stops a known caller past its share between two slices with the 429 (another caller active)', async () => {
    const { concurrency, credentials, loop } = parts(1);
    const req = request('heavy');
    credentials.remember(req, 'c1', '');
    concurrency.acquire('c2').release();
    loop.spend(req, 5); // past the 1 ms burst
    const stopped = await loop.narrativesInSlices(req, [narrative(4)]).then(
      () => undefined,
      (error: OperationOutcomeError) => error,
    );
    expect(stopped).toMatchObject({ status: 429 });
    expect(stopped!.message).toMatch(/CLIENT_LOOP_MS_PER_SECOND/);
    // alone, the same caller's narrative is parsed to the end
    const { loop: alone, credentials: known } = parts(1);
    const own = request('alone');
    known.remember(own, 'c1', '');
    alone.spend(own, 5);
    await expect(alone.narrativesInSlices(own, [narrative(4)])).resolves.toBeUndefined();
  });

  it('charges the parse of a body parser from its verify to its callback, and a synchronous step', () => {
    const { concurrency, credentials, loop } = parts(10);
    const req = request('parser');
    credentials.remember(req, 'c1', '');
    concurrency.acquire('c2').release();
    const res = {} as ServerResponse;
    const verified: Buffer[] = [];
    const busy = (ms: number) => {
      const until = performance.now() + ms;
      while (performance.now() < until);
    };
    const parser = loop.timedBodyParser(
      (verify) => (r, s, next) => {
        verify(r, s, Buffer.from('{}'), 'utf-8');
        busy(12); // the parse
        next();
      },
      (_r, _s, body) => verified.push(body),
    );
    let nextCalls = 0;
    parser(req, res, () => (nextCalls += 1));
    expect(verified).toHaveLength(1);
    expect(nextCalls).toBe(1);
    expect(concurrency.refusal('c1', '')?.message).toMatch(/CLIENT_LOOP_MS_PER_SECOND/);
    // a step after the parse: charged on a request whose body was parsed, not on one without
    const { concurrency: c2, credentials: k2, loop: l2 } = parts(10);
    const step = l2.timedStep((_r, _s, next) => {
      busy(12);
      next();
    });
    const withoutBody = request('no-body');
    k2.remember(withoutBody, 'c1', '');
    c2.acquire('c2').release();
    step(withoutBody, res, () => undefined);
    expect(c2.refusal('c1', '')).toBeUndefined();
    const other = request('step');
    k2.remember(other, 'c1', '');
    l2.timedBodyParser(
      (verify) => (r, s, next) => {
        verify(r, s, Buffer.from('{}'), 'utf-8');
        next();
      },
      () => undefined,
    )(other, res, () => undefined);
    step(other, res, () => undefined);
    expect(c2.refusal('c1', '')?.status).toBe(429);
  });

  it("charges a body's bytes to the caller's byte share while another caller is active, before or after admission knows it; alone never", () => {
    const parse = (loop: EventLoopTime, req: IncomingMessage) =>
      loop.timedBodyParser(
        (verify) => (r, s, next) => {
          verify(r, s, Buffer.alloc(2_000, 'x'), 'utf-8');
          next();
        },
        () => undefined,
      )(req, {} as ServerResponse, () => undefined);
    // credentials verified lately: charged at once (1,000 bytes a second, a burst of 1,000)
    const known = parts(0, 1_000);
    const req = request('known');
    known.credentials.remember(req, 'c1', '');
    known.concurrency.acquire('c2').release();
    parse(known.loop, req);
    expect(known.concurrency.refusal('c1', '')?.message).toMatch(/CLIENT_RESPONSE_BYTES_PER_SECOND/);
    // a caller not known yet: charged when admission verifies it, before its slot is taken
    const unknown = parts(0, 1_000);
    const fresh = request('fresh');
    unknown.concurrency.acquire('c2').release();
    parse(unknown.loop, fresh);
    expect(unknown.concurrency.refusal('c1', '')).toBeUndefined();
    unknown.loop.admitted(fresh, 'c1', '');
    expect(unknown.concurrency.refusal('c1', '')?.message).toMatch(/request bodies/);
    // alone on the server: nobody waits for its bodies (work-conserving)
    const alone = parts(0, 1_000);
    const own = request('alone');
    alone.credentials.remember(own, 'c1', '');
    parse(alone.loop, own);
    expect(alone.concurrency.refusal('c1', '')).toBeUndefined();
  });

  it("timedOnLoop charges a step's time to the caller, once, even when the step throws; no caller, no charge", () => {
    const charged: number[] = [];
    const caller = { chargeLoopMs: (ms: number) => charged.push(ms) };
    const busy = () => {
      const until = performance.now() + 5;
      while (performance.now() < until);
      return 'done';
    };
    expect(timedOnLoop(caller, busy)).toBe('done');
    expect(() =>
      timedOnLoop(caller, () => {
        busy();
        throw new Error('invalid');
      }),
    ).toThrow('invalid');
    expect(timedOnLoop(undefined, busy)).toBe('done');
    expect(charged).toHaveLength(2);
    expect(charged.every((ms) => ms >= 5)).toBe(true);
  });

  it('timedOnLoopBetween charges the synchronous parts of an async step, not its waits, once, even when it throws', async () => {
    const charged: number[] = [];
    const caller = { chargeLoopMs: (ms: number) => charged.push(ms) };
    const busy = (ms: number) => {
      const until = performance.now() + ms;
      while (performance.now() < until);
    };
    // the wait is long next to the busy parts: charging it would show whatever the machine's load
    const WAIT_MS = 300;
    const wait = (value: string) =>
      new Promise<string>((resolve) => setTimeout(() => resolve(value), WAIT_MS));
    const step = async (select: (value: string) => Promise<string>) => {
      busy(5);
      const first = await select('a');
      busy(5);
      const second = await select('b');
      busy(5);
      return first + second;
    };
    const started = performance.now();
    await expect(timedOnLoopBetween(caller, wait, step)).resolves.toBe('ab');
    const wall = performance.now() - started;
    await expect(
      timedOnLoopBetween(caller, wait, async (select) => {
        busy(5);
        await select('a');
        busy(5);
        throw new Error('invalid');
      }),
    ).rejects.toThrow('invalid');
    await expect(timedOnLoopBetween(undefined, wait, step)).resolves.toBe('ab');
    expect(charged).toHaveLength(2);
    expect(charged[0]).toBeGreaterThanOrEqual(15);
    // both waits (2 × 300 ms) left out, whatever else the wall time held
    expect(charged[0]).toBeLessThan(wall - 2 * WAIT_MS + 4);
    expect(charged[1]).toBeGreaterThanOrEqual(10);
  });

  it('inTurns runs each step in a turn of the event loop of its own, in order, each charged to the caller', async () => {
    const charged: number[] = [];
    const caller = { chargeLoopMs: (ms: number) => charged.push(ms) };
    const seen: string[] = [];
    // another request's I/O callbacks, one per turn: each runs between two steps, not after all
    let others = 0;
    const other = () => {
      seen.push('other');
      if (++others < 5) setImmediate(other);
    };
    setImmediate(other);
    const results = await inTurns(caller, ['a', 'b', 'c'], (item, index) => {
      seen.push(item);
      return `${item}${index}`;
    });
    expect(results).toEqual(['a0', 'b1', 'c2']);
    expect(seen.slice(0, 6)).toEqual(['other', 'a', 'other', 'b', 'other', 'c']);
    expect(charged).toHaveLength(3);
    expect(await inTurns(undefined, ['a'], (item) => item)).toEqual(['a']);
    expect(charged).toHaveLength(3);
  });

  it('inTurns stops at a step that throws, charged, and rejects with its error', async () => {
    const charged: number[] = [];
    const caller = { chargeLoopMs: (ms: number) => charged.push(ms) };
    const ran: number[] = [];
    await expect(
      inTurns(caller, [1, 2, 3], (item) => {
        ran.push(item);
        if (item === 2) throw new Error('invalid');
      }),
    ).rejects.toThrow('invalid');
    expect(ran).toEqual([1, 2]);
    expect(charged).toHaveLength(2);
  });
});
