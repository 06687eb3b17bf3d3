import type { INestApplicationContext, RequestHandler } from '@nestjs/common/interfaces';
import { ExpressAdapter } from '@nestjs/platform-express';
import type { Response } from 'express';
import { compileFhirRoute } from './compiled-fhir-route';
import type { FhirRequest } from './fhir-route-state';
import { writeFhirReply } from './fhir-reply';
import { installRouteTable } from './route-table';

/**
 * Nest's Express adapter, except that what a FHIR handler (`@FhirRoute()`) returns is written by
 * `writeFhirReply`. Nest hands every handler's result to the adapter's `reply`; presenting it here
 * rather than in an interceptor spares each FHIR request an rxjs pipeline and two
 * `AsyncResource.bind` (an interceptor's cost on every request, whatever it does), and Express's
 * `res.send` helpers. `req.fhir` is set by FhirRouteGuard before a FHIR handler runs, and only then.
 * `base` is the public base URL of the store (Location headers are absolute).
 * Its routes are found through a RouteTable (route-table.ts) instead of Express's walk over all of
 * them: Nest registers the not-found answer right after the last route, so the table is put in
 * front of the routes then.
 * A FHIR route is registered with a handler compiled for it (compiled-fhir-route.ts) in place of
 * Nest's generic one, when `compileFhirRoutes(app)` was called before the app's init and that
 * handler does all Nest's would; `fhirRoutes` says which were and why the others were not.
 */
export class FhirExpressAdapter extends ExpressAdapter {
  private app?: INestApplicationContext;
  private readonly compiled = new WeakMap<RequestHandler, RequestHandler | string>();
  readonly fhirRoutes: { compiled: string[]; byNest: Array<{ path: string; reason: string }> } = {
    compiled: [],
    byNest: [],
  };

  constructor(private readonly base: string) {
    super();
  }

  /** The app whose controllers and FhirRouteGuard the compiled FHIR routes call (before its init). */
  compileFhirRoutes(app: INestApplicationContext): void {
    this.app = app;
  }

  override get(path: unknown, handler?: RequestHandler): unknown {
    if (handler === undefined) return super.get(path as RequestHandler);
    return super.get(path, this.fhirHandler('GET', path, handler));
  }

  override post(path: unknown, handler?: RequestHandler): unknown {
    if (handler === undefined) return super.post(path as RequestHandler);
    return super.post(path, this.fhirHandler('POST', path, handler));
  }

  override put(path: unknown, handler?: RequestHandler): unknown {
    if (handler === undefined) return super.put(path as RequestHandler);
    return super.put(path, this.fhirHandler('PUT', path, handler));
  }

  override patch(path: unknown, handler?: RequestHandler): unknown {
    if (handler === undefined) return super.patch(path as RequestHandler);
    return super.patch(path, this.fhirHandler('PATCH', path, handler));
  }

  override delete(path: unknown, handler?: RequestHandler): unknown {
    if (handler === undefined) return super.delete(path as RequestHandler);
    return super.delete(path, this.fhirHandler('DELETE', path, handler));
  }

  /** Nest's handler for a route, or the compiled one of a FHIR route. */
  private fhirHandler(method: string, path: unknown, handler: RequestHandler): RequestHandler {
    if (this.app === undefined || typeof path !== 'string') return handler;
    // one handler for each of its paths (an operation's levels and bases)
    let compiled = this.compiled.get(handler);
    if (compiled === undefined) {
      compiled = compileFhirRoute(handler, this.app, this);
      this.compiled.set(handler, compiled);
    }
    if (typeof compiled !== 'string') {
      this.fhirRoutes.compiled.push(`${method} ${path}`);
      return compiled;
    }
    if (compiled !== 'not a FHIR handler')
      this.fhirRoutes.byNest.push({ path: `${method} ${path}`, reason: compiled });
    return handler;
  }

  override reply(response: unknown, body: unknown, statusCode?: number): unknown {
    const res = response as Response;
    const req = res.req as FhirRequest | undefined;
    if (req?.fhir !== undefined) return writeFhirReply(req, res, body, this.base);
    return super.reply(response, body, statusCode);
  }

  override setNotFoundHandler(...args: Parameters<ExpressAdapter['setNotFoundHandler']>): unknown {
    installRouteTable(this.getInstance());
    return super.setNotFoundHandler(...args);
  }
}
