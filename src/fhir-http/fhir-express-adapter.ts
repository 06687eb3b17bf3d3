import { ExpressAdapter } from '@nestjs/platform-express';
import type { Response } from 'express';
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
 */
export class FhirExpressAdapter extends ExpressAdapter {
  constructor(private readonly base: string) {
    super();
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
