import { ExpressAdapter } from '@nestjs/platform-express';
import type { Express, NextFunction, Request, Response } from 'express';
import { Route } from 'router';
import request from 'supertest';
import { installRouteTable, RouteTable, type RouterLayer } from './route-table';

/** What a handler saw: the route Express chose for it and the parameters it decoded. */
function answer(name: string) {
  return (req: Request, res: Response) => {
    res.json({ name, route: (req.route as { path?: string } | undefined)?.path, params: req.params });
  };
}

/**
 * An Express 5 app as Nest builds one (Nest's adapter's instance): middleware, then routes in an
 * order where generic paths come after fixed ones, routes that pass requests on, then a not-found
 * answer and an error handler. `calls` counts the handlers that ran per request.
 */
function buildApp(withTable: boolean, calls: string[]): { app: Express; installed: boolean } {
  const app = new ExpressAdapter().getInstance<Express>();
  app.use((req: Request, _res: Response, next: NextFunction) => {
    calls.push('middleware');
    next();
  });
  const counted = (name: string, handler: (req: Request, res: Response, next: NextFunction) => void) => {
    return (req: Request, res: Response, next: NextFunction) => {
      calls.push(name);
      handler(req, res, next);
    };
  };
  app.get('/health', counted('health', answer('health')));
  app.get('/files/{*rest}', counted('files', answer('files')));
  app.get('/:version/metadata', counted('metadata', answer('metadata')));
  app.get(
    '/:version/pass/:x',
    counted('pass', (_req, _res, next) => next()),
  );
  app.get(
    '/:version/skip/:x',
    counted('skip', (_req, _res, next) => next('route')),
  );
  app.get(
    '/:version/exhaust/:x/:y',
    counted('exhaust', (_req, _res, next) => next()),
  );
  app.get(
    '/:version/fail/:x',
    counted('fail', (_req, _res, next) => next(new Error('failed'))),
  );
  app.get(
    '/:version/throw/:x',
    counted('throw', () => {
      throw new Error('thrown');
    }),
  );
  // a route of two handlers (the first passes on): its own dispatch walks them
  app
    .route('/:version/two/:x')
    .get(counted('two: first', (_req, _res, next) => next()))
    .get(counted('two: second', answer('two')));
  app.head(
    '/:version/head/:x',
    counted('head', (_req, res) => res.status(204).end()),
  );
  app.get('/:version/head/:x', counted('head: get', answer('head: get')));
  app.get('/:version/Patient/$everything', counted('everything', answer('everything')));
  app.get('/:version/:type/_history', counted('history', answer('history')));
  app.post('/:version/:type', counted('create', answer('create')));
  app.get('/:version/:type/:id', counted('read', answer('read')));
  app.put('/:version/:type/:id', counted('update', answer('update')));
  app.get('/:version/:type/:id/:file.ndjson', counted('ndjson', answer('ndjson')));
  app.get('/:version/:compartment/:id/\\*', counted('compartment', answer('compartment')));
  const installed = withTable
    ? installRouteTable(app as unknown as Parameters<typeof installRouteTable>[0])
    : false;
  app.use((req: Request, res: Response) => {
    calls.push('not found');
    res.status(404).json({ name: 'not found', route: (req.route as { path?: string } | undefined)?.path });
  });
  app.use((err: Error, _req: Request, res: Response, _next: NextFunction) => {
    calls.push('error');
    res.status(500).json({ name: 'error', message: err.message });
  });
  return { app, installed };
}

const REQUESTS: ReadonlyArray<[string, string]> = [
  ['GET', '/r4/Observation/o1'],
  ['GET', '/R4/observation/o1/'],
  ['HEAD', '/r4/Observation/o1'],
  ['GET', '/r4/Observation/_history'],
  ['GET', '/r4/Patient/$everything'],
  ['GET', '/r4/PATIENT/$EVERYTHING'],
  ['GET', '/r4/Patient/%24everything'],
  ['GET', '/r4/metadata'],
  ['GET', '/health'],
  ['GET', '/HEALTH/'],
  ['GET', '/health/x'],
  ['GET', '/files/a/b/c'],
  ['GET', '/files'],
  ['GET', '/r4/Patient/p1/*'],
  ['GET', '/r4/Patient/p1/x.ndjson'],
  ['GET', '/r4/Patient/%2Fp1'],
  ['GET', '/r4/Patient/%E0%A4%A'],
  ['GET', '/r4/pass/p1'],
  ['GET', '/r4/skip/p1'],
  ['GET', '/r4/exhaust/a/b'],
  ['GET', '/r4/fail/p1'],
  ['GET', '/r4/throw/p1'],
  ['GET', '/r4/two/p1'],
  ['HEAD', '/r4/two/p1'],
  ['HEAD', '/r4/head/p1'],
  ['GET', '/r4/head/p1'],
  ['GET', '/r4/Observation/o1/x/y/z'],
  ['GET', '/r4//o1'],
  ['GET', '//'],
  ['GET', '/'],
  ['GET', '/\u212Aealth'],
  ['POST', '/r4/Observation'],
  ['PUT', '/r4/Observation'],
  ['PUT', '/r4/Observation/o1'],
  ['DELETE', '/r4/Observation/o1'],
  ['OPTIONS', '/r4/Observation/o1'],
];

async function send(app: Express, method: string, path: string) {
  const response = await request(app)[method.toLowerCase() as 'get'](path);
  return { status: response.status, body: response.text, allow: response.headers.allow as unknown };
}

describe('RouteTable', () => {
  it('finds the route, the parameters and the fall-through Express finds, each handler running once', async () => {
    const plainCalls: string[] = [];
    const tableCalls: string[] = [];
    const plain = buildApp(false, plainCalls);
    const table = buildApp(true, tableCalls);
    expect(table.installed).toBe(true);
    for (const [method, path] of REQUESTS) {
      plainCalls.length = 0;
      tableCalls.length = 0;
      const expected = await send(plain.app, method, path);
      const actual = await send(table.app, method, path);
      expect({ method, path, ...actual, calls: [...tableCalls] }).toEqual({
        method,
        path,
        ...expected,
        calls: [...plainCalls],
      });
    }
  });

  it("runs a route's single handler without the route's dispatch, and a route of several through it", async () => {
    const dispatch = jest.spyOn(Route.prototype as { dispatch(...args: unknown[]): void }, 'dispatch');
    try {
      const calls: string[] = [];
      const { app } = buildApp(true, calls);
      expect(JSON.parse((await send(app, 'GET', '/r4/Observation/o1')).body).name).toBe('read');
      expect((await send(app, 'HEAD', '/r4/head/p1')).status).toBe(204);
      expect(JSON.parse((await send(app, 'GET', '/r4/pass/p1')).body).name).toBe('read');
      expect(dispatch).not.toHaveBeenCalled();
      expect(JSON.parse((await send(app, 'GET', '/r4/two/p1')).body).name).toBe('two');
      expect(dispatch).toHaveBeenCalledTimes(1);
      expect(calls).toEqual([
        'middleware',
        'read',
        'middleware',
        'head',
        'middleware',
        'pass',
        'read',
        'middleware',
        'two: first',
        'two: second',
      ]);
    } finally {
      dispatch.mockRestore();
    }
  });

  it('answers as the routes do (a sample of what the comparison covers)', async () => {
    const { app } = buildApp(true, []);
    expect(JSON.parse((await send(app, 'GET', '/R4/observation/o1/')).body)).toEqual({
      name: 'read',
      route: '/:version/:type/:id',
      params: { version: 'R4', type: 'observation', id: 'o1' },
    });
    expect(JSON.parse((await send(app, 'GET', '/r4/pass/p1')).body).name).toBe('read');
    expect(JSON.parse((await send(app, 'GET', '/r4/exhaust/a/b')).body)).toEqual({
      name: 'not found',
      route: '/:version/exhaust/:x/:y',
    });
    expect((await send(app, 'GET', '/r4/fail/p1')).status).toBe(500);
    expect((await send(app, 'GET', '/r4/Patient/%E0%A4%A')).status).toBe(500);
    expect((await send(app, 'OPTIONS', '/r4/Observation/o1')).status).toBe(404);
  });

  it('tries only the routes of the method, segment count and first segment of the request', () => {
    const { app } = buildApp(false, []);
    const stack = (app as unknown as { router: { stack: RouterLayer[] } }).router.stack;
    const table = new RouteTable(stack.filter((layer) => layer.route !== undefined));
    const paths = (method: string, path: string) =>
      table.candidates(method, path).map((layer) => layer.route!.path);
    expect(paths('GET', '/r4/Observation/o1')).toEqual([
      '/files/{*rest}',
      '/:version/pass/:x',
      '/:version/skip/:x',
      '/:version/fail/:x',
      '/:version/throw/:x',
      '/:version/two/:x',
      '/:version/head/:x',
      '/:version/Patient/$everything',
      '/:version/:type/_history',
      '/:version/:type/:id',
    ]);
    // HEAD: the GET routes and the route of HEAD's own handler, in registration order
    const head = paths('GET', '/r4/Observation/o1');
    head.splice(head.indexOf('/:version/head/:x'), 0, '/:version/head/:x');
    expect(paths('HEAD', '/r4/Observation/o1/')).toEqual(head);
    expect(paths('PUT', '/r4/Observation/o1')).toEqual(['/:version/:type/:id']);
    expect(paths('GET', '/Health')).toEqual(['/health', '/files/{*rest}']);
    expect(paths('GET', '/r4/a/b/c/d/e/f/g')).toEqual(['/files/{*rest}']);
    expect(paths('DELETE', '/r4/Observation/o1')).toEqual([]);
  });

  it('leaves a router it cannot serve exactly as it is (parameter callbacks)', () => {
    const app = new ExpressAdapter().getInstance<Express>();
    app.param('id', (_req, _res, next) => next());
    app.get('/:version/:type/:id', answer('read'));
    const router = (app as unknown as { router: Parameters<typeof installRouteTable>[0]['router'] }).router;
    const before = [...router.stack];
    expect(installRouteTable(app as unknown as Parameters<typeof installRouteTable>[0])).toBe(false);
    expect(router.stack).toEqual(before);
  });
});
