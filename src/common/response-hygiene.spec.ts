import { createServer, type IncomingMessage, type ServerResponse } from 'http';
import type { AddressInfo } from 'net';
import helmet from 'helmet';
import { forRequestBodies, headerBlocks, inOneLayer, recordedHeaders } from './response-hygiene';

type Handler = (req: IncomingMessage, res: ServerResponse, next: (error?: unknown) => void) => void;

/** The headers of an answer to `init` from a real HTTP server running `middleware`, then 200. */
async function headersThrough(middleware: Handler, init?: RequestInit): Promise<Record<string, string>> {
  const server = createServer((req, res) => middleware(req, res, () => res.end('ok')));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  try {
    const { port } = server.address() as AddressInfo;
    const answer = await fetch(`http://127.0.0.1:${port}/r4/Patient/1`, init);
    const headers: Record<string, string> = {};
    answer.headers.forEach((value, name) => {
      if (!['date', 'connection', 'keep-alive', 'content-length', 'transfer-encoding'].includes(name))
        headers[name] = value;
    });
    return headers;
  } finally {
    await new Promise((resolve) => server.close(resolve));
  }
}

describe('recordedHeaders', () => {
  it.each([
    ['strict', () => helmet()],
    ['without CSP (the Swagger UI)', () => helmet({ contentSecurityPolicy: false })],
  ])("helmet's headers recorded once are the ones helmet sets on an answer (%s)", async (_name, make) => {
    const live = await headersThrough(make());
    const block = recordedHeaders(make());
    const recorded = await headersThrough(headerBlocks(() => block) as unknown as Handler);
    expect(Object.keys(live).length).toBeGreaterThan(5);
    expect(recorded).toEqual(live);
  });

  it('refuses a middleware that does not finish synchronously', () => {
    expect(() => recordedHeaders((_req, _res, next) => void setImmediate(next))).toThrow(/synchronously/);
  });
});

describe('forRequestBodies', () => {
  const steps = (seen: string[]): Handler[] => [
    (_req, _res, next) => {
      seen.push('parse');
      next();
    },
    (_req, _res, next) => {
      seen.push('check');
      next();
    },
  ];
  const run = (handlers: Handler[], headers: Record<string, string>) =>
    new Promise<unknown>((resolve) =>
      forRequestBodies(handlers)({ headers } as IncomingMessage, {} as ServerResponse, resolve),
    );

  it('runs nothing for a request without a body (no Content-Length, no Transfer-Encoding)', async () => {
    const seen: string[] = [];
    expect(await run(steps(seen), {})).toBeUndefined();
    expect(seen).toEqual([]);
  });

  it('runs every step in order for a request with a body (even Content-Length: 0, as body-parser reads it)', async () => {
    const withBodies: Array<Record<string, string>> = [
      { 'content-length': '12' },
      { 'transfer-encoding': 'chunked' },
      { 'content-length': '0' },
    ];
    for (const headers of withBodies) {
      const seen: string[] = [];
      expect(await run(steps(seen), headers)).toBeUndefined();
      expect(seen).toEqual(['parse', 'check']);
    }
  });

  it("an error ends the stack and goes on to Express's error handling", async () => {
    const seen: string[] = [];
    const refused = new Error('too large');
    const [parse, check] = steps(seen);
    const failing: Handler = (_req, _res, next) => next(refused);
    expect(await run([parse, failing, check], { 'content-length': '5' })).toBe(refused);
    expect(seen).toEqual(['parse']);
  });
});

describe('inOneLayer', () => {
  const seen: string[] = [];
  const named =
    (name: string): Handler =>
    (_req, _res, next) => {
      seen.push(name);
      next();
    };
  const run = (
    steps: Array<(req: IncomingMessage, res: ServerResponse, next: (error?: unknown) => void) => unknown>,
  ) =>
    new Promise<unknown>((resolve) => {
      seen.length = 0;
      inOneLayer(steps)({ headers: {} } as IncomingMessage, {} as ServerResponse, resolve);
    });

  it('runs every step in order, then goes on to the next layer without an error', async () => {
    const later: Handler = (_req, _res, next) => {
      seen.push('later');
      setImmediate(next);
    };
    expect(await run([named('a'), later, named('b')])).toBeUndefined();
    expect(seen).toEqual(['a', 'later', 'b']);
  });

  it('an error passed on, thrown, or a rejected promise ends the steps and goes to error handling', async () => {
    const refused = new Error('refused');
    expect(await run([named('a'), (_req, _res, next) => next(refused), named('b')])).toBe(refused);
    expect(seen).toEqual(['a']);
    expect(
      await run([
        named('a'),
        () => {
          throw refused;
        },
        named('b'),
      ]),
    ).toBe(refused);
    expect(seen).toEqual(['a']);
    expect(await run([named('a'), () => Promise.reject(refused), named('b')])).toBe(refused);
    expect(seen).toEqual(['a']);
  });

  it('a step that answers and does not call next ends the request there', async () => {
    let answered = false;
    const answer: Handler = () => {
      answered = true;
    };
    const outcome = await Promise.race([
      run([named('a'), answer, named('b')]),
      new Promise((resolve) => setImmediate(() => resolve('not passed on'))),
    ]);
    expect(outcome).toBe('not passed on');
    expect(answered).toBe(true);
    expect(seen).toEqual(['a']);
  });
});
