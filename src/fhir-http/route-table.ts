import type { NextFunction, Request, RequestHandler, Response } from 'express';

/** What this file needs of an Express 5 router layer (the `router` package's `Layer`). */
export interface RouterLayer {
  route?: {
    path: unknown;
    _handlesMethod(method: string): boolean;
    /** The route's own layers: one per handler, each with the method it serves (none: `all`). */
    stack?: RouterLayer[];
  };
  match(path: string): { params: Record<string, string>; pattern?: unknown } | false;
  handleRequest(req: Request, res: Response, next: NextFunction): void;
}

interface AppRouter {
  stack: RouterLayer[];
  caseSensitive?: boolean;
  strict?: boolean;
  mergeParams?: boolean;
  params: Record<string, unknown>;
}

/** What can be told of a route's path without matching it. */
interface PathShape {
  /** How many segments every path it matches has; undefined: any number (wildcards, optional parts). */
  count?: number;
  /** Its first segment in lower case when that is plain text; undefined when it is a parameter. */
  first?: string;
}

/** A path-to-regexp 8 path's special characters (parameters, wildcards, groups, escapes). */
const SPECIAL = /[:*{}()[\]+?!\\]/;
const ASCII = /^[\x20-\x7e]*$/;

function shapeOf(path: unknown): PathShape {
  if (typeof path !== 'string' || !path.startsWith('/') || path.includes('\\/')) return {};
  // an escaped character (`\*`: a literal `*`) stands for itself, within its segment
  const unescaped = path.replace(/\\./g, '\\');
  // a wildcard (`*rest`) or an optional part (`{…}`) spans any number of segments
  if (/[*{]/.test(unescaped)) return {};
  // Express's non-strict matching ignores the route path's trailing slashes (`loosen`)
  const loose = unescaped.replace(/\/+$/, '');
  if (loose === '') return { count: 0, first: '' };
  const segments = loose.slice(1).split('/');
  const first = segments[0];
  const plain = !SPECIAL.test(first) && ASCII.test(first);
  return { count: segments.length, first: plain ? first.toLowerCase() : undefined };
}

/**
 * The one handler layer of a route that has a single handler: a candidate route serves the request's
 * method (`_handlesMethod`, from the same `methods` its handlers were added with), so that layer is
 * the one its `dispatch` would run (HEAD by the GET handler when there is no HEAD one), and `next()`,
 * `next('route')` or an error from it end the route alike. Calling it with the route's continuation
 * saves the dispatch's closure and its own `next` per request. undefined: several handlers, which
 * the route's dispatch walks.
 */
function singleHandler(route: RouterLayer['route']): RouterLayer | undefined {
  const stack = route?.stack;
  return stack?.length === 1 ? stack[0] : undefined;
}

/** A request path's segment count and first segment, as the shapes count them. */
function requestShape(path: string): { count: number; first: string } {
  // one trailing slash is allowed by non-strict matching; `/` itself has no segment
  let end = path.length;
  if (end > 1 && path.charCodeAt(end - 1) === 47) end--;
  if (end <= 1) return { count: 0, first: '' };
  let count = 1;
  let firstEnd = -1;
  for (let i = 1; i < end; i++) {
    if (path.charCodeAt(i) !== 47) continue;
    if (firstEnd < 0) firstEnd = i;
    count++;
  }
  return { count, first: path.slice(1, firstEnd < 0 ? end : firstEnd).toLowerCase() };
}

/**
 * The app's routes in a table: for a request, only the routes that can match it (its method, its
 * number of path segments, its first segment) are tried, in the order they were registered, each
 * by Express's own matcher. Express's router tries every layer in turn (≈ 100 on this app, and a
 * read by id — `/:version/:type/:id` — is one of the last); this finds the same route after a
 * handful. It decides nothing itself: a route it skips could not have matched (a route's path has
 * a fixed number of segments unless it has a wildcard or an optional part, and a plain first
 * segment matches only itself, ignoring ASCII case, as Express matches it), and what it does with
 * the route that matches is what Express's router does (`req.route`, `req.params`, the layer's
 * `handleRequest`). A request it cannot place (OPTIONS, whose automatic answer lists the methods
 * of every matching route; a path that matches no route) goes on through Express's own walk.
 */
export class RouteTable {
  private readonly buckets = new Map<string, RouterLayer[]>();
  /** Per bucket, each route's single handler (singleHandler), at the route's place. */
  private readonly handlers = new Map<RouterLayer[], Array<RouterLayer | undefined>>();
  private readonly firsts = new Set<string>();
  private readonly longest: number;
  private readonly shapes: Array<[RouterLayer, PathShape]>;

  constructor(routes: readonly RouterLayer[]) {
    this.shapes = routes.map((layer) => [layer, shapeOf(layer.route?.path)]);
    let longest = 0;
    for (const [, shape] of this.shapes) {
      if (shape.first !== undefined) this.firsts.add(shape.first);
      if (shape.count !== undefined) longest = Math.max(longest, shape.count);
    }
    this.longest = longest;
  }

  /** The routes that can match a request, in registration order (built once per kind of request). */
  candidates(method: string, path: string): RouterLayer[] {
    const request = requestShape(path);
    // bounded keys: the methods Node parses, the counts up to the longest route, the plain first segments
    const count = Math.min(request.count, this.longest + 1);
    const first = this.firsts.has(request.first) ? request.first : '';
    const key = `${method} ${count} ${first}`;
    let bucket = this.buckets.get(key);
    if (bucket === undefined) {
      bucket = this.shapes
        .filter(
          ([layer, shape]) =>
            layer.route?._handlesMethod(method) === true &&
            (shape.count === undefined || shape.count === count) &&
            (shape.first === undefined || shape.first === first),
        )
        .map(([layer]) => layer);
      this.buckets.set(key, bucket);
      this.handlers.set(
        bucket,
        bucket.map((layer) => singleHandler(layer.route)),
      );
    }
    return bucket;
  }

  /** The single handlers of `candidates`' answer, at the same places (undefined: dispatch the route). */
  singleHandlers(bucket: RouterLayer[]): ReadonlyArray<RouterLayer | undefined> {
    return this.handlers.get(bucket) ?? [];
  }
}

/** Set on a request that routes have passed on and no later route matched (see installRouteTable). */
const PASSED_ON = Symbol('passed on by every route');

/** The router's key for the matched route's pattern (a symbol private to the `router` package). */
function matchedRouteKey(req: Request): symbol | undefined {
  return Object.getOwnPropertySymbols(req).find((s) => s.description === 'router.tracing.matchedRoute');
}

/**
 * Puts a RouteTable of the routes registered so far in front of them, as one middleware at the
 * place of the first of them: the routes at the end of the app's router stack (after its last
 * middleware). Returns false, changing nothing, when the router is set up otherwise than the table
 * assumes (case-sensitive or strict routing, `app.param` callbacks).
 */
export function installRouteTable(app: { router: AppRouter }): boolean {
  const router = app.router;
  if (router.caseSensitive || router.strict || router.mergeParams || Object.keys(router.params).length > 0)
    return false;
  const stack = router.stack;
  let start = stack.length;
  while (start > 0 && stack[start - 1].route !== undefined) start--;
  if (start === stack.length) return false;
  const routes = stack.slice(start);
  const table = new RouteTable(routes);
  // the router's own `Layer.prototype.handleRequest`, which the dispatch calls
  const handleRequest = (Object.getPrototypeOf(routes[0]) as RouterLayer).handleRequest;
  for (const route of routes) {
    route.handleRequest = function (this: RouterLayer, req, res, next) {
      if ((req as unknown as Record<symbol, boolean>)[PASSED_ON]) return next();
      return handleRequest.call(this, req, res, next);
    };
  }
  let matchedRoute: symbol | undefined | null = null;

  const dispatch: RequestHandler = function routeTable(req, res, next) {
    const path = req.path;
    if (req.method === 'OPTIONS' || typeof path !== 'string' || path.charCodeAt(0) !== 47) return next();
    if (matchedRoute === null) matchedRoute = matchedRouteKey(req);
    const routes = table.candidates(req.method, path);
    const single = table.singleHandlers(routes);
    const tryFrom = (from: number, passedOn: boolean): void => {
      for (let i = from; i < routes.length; i++) {
        const layer = routes[i];
        let match;
        try {
          match = layer.match(path);
        } catch (err) {
          // a parameter that cannot be decoded: Express passes the error on, no route matches
          return next(err);
        }
        if (!match) continue;
        req.route = layer.route;
        if (matchedRoute) (req as unknown as Record<symbol, unknown>)[matchedRoute] = match.pattern;
        req.params = match.params;
        // a route that passes the request on (`next()`, `next('route')`): the next route that matches
        const passOn = (err?: unknown) => (err && err !== 'route' ? next(err) : tryFrom(i + 1, true));
        const handler = single[i];
        return handler === undefined
          ? handleRequest.call(layer, req, res, passOn)
          : handler.handleRequest(req, res, passOn);
      }
      // Past the last route that matches, Express goes on to the middleware after the routes (the
      // not-found answer): the routes on the way, already tried, pass the request on.
      if (passedOn) (req as unknown as Record<symbol, boolean>)[PASSED_ON] = true;
      next();
    };
    tryFrom(0, false);
  };
  // `use` appends the layer; move it in front of the routes
  (app as unknown as { use(handler: RequestHandler): void }).use(dispatch);
  const layer = stack.pop()!;
  stack.splice(start, 0, layer);
  return true;
}
