import type { Request } from 'express';
import { parseFhirVersion, type FhirVersion, type ResponseFormat } from '@app/fhir';
import type { RouteLane } from '../admission/request-admission';
import type { TenantOptions } from '../tenancy/tenant-options';

/** Metadata key of `@FhirRoute()` (and of every `@FhirOperation()` handler). */
export const FHIR_ROUTE = 'fhir-http:route';

/** A controller's method that handles a route, and a controller class. */
export type RouteHandler = (...args: never[]) => unknown;
export type ControllerClass = abstract new (...args: never[]) => unknown;

/**
 * Metadata key, on a FHIR handler, of where it is defined (`FhirHandlerSite`). Nest copies a
 * handler's metadata onto the request handler it registers for it, which is how the app's adapter
 * recognises a FHIR route and finds its controller method (compiled-fhir-route.ts).
 */
export const FHIR_HANDLER = 'fhir-http:handler';

export interface FhirHandlerSite {
  controller: ControllerClass;
  /** The controller's property that holds the handler. */
  method: string;
}

/**
 * The FHIR base a route hangs under. Each is a path prefix that ends at the version:
 * `{base_url}/{v}`, `{analytics_url}/bulk-data/{v}`, the R4-only population gateway
 * `{gateway_url}/v1/{customer}/bulk-export/bulk-data/r4`, and the directory's FHIR view.
 */
export type FhirBase = 'store' | 'bulk-data' | 'gateway' | 'directory';

export const BASE_PREFIX: Record<FhirBase, string> = {
  store: ':version',
  'bulk-data': 'bulk-data/:version',
  gateway: 'v1/:customer/bulk-export/bulk-data/r4',
  directory: 'directory/r4',
};

/** What a route's request body must be (https://hl7.org/fhir/R4/http.html#mime-type). */
export type FhirBodyKind =
  /** a FHIR resource: JSON, or 415 */
  | 'resource'
  /** `_search` form parameters: application/x-www-form-urlencoded, or 415 */
  | 'form'
  /**
   * an operation's input (https://hl7.org/fhir/R4/operations.html#request): a JSON resource
   * (Parameters, or the resource an operation takes) or form parameters, or none; else 415
   */
  | 'parameters'
  /** whatever the handler reads (PATCH documents, operation Parameters, none) */
  | 'any';

/** Options of `@FhirRoute()`. */
export interface FhirRouteOptions {
  /**
   * Read or write: a POST that changes nothing (`_search`, `$validate`, an export kick-off) is a
   * read for token scopes and client-wide credentials. Default: GET/HEAD read, the rest write.
   */
  kind?: 'read' | 'write';
  /** Credentials asked of the caller; `false` for public routes (the CapabilityStatement). */
  tenant?: Omit<TenantOptions, 'readRoute'> | false;
  body?: FhirBodyKind;
  /** `_elements` / `_summary` apply to the resource answered (reads). */
  shape?: boolean;
  /**
   * A fixed media type for answers that are JSON but no FHIR resource (a bulk export manifest, the
   * SMART configuration); default: negotiated from Accept and `_format`.
   */
  mediaType?: 'application/json';
  /**
   * Whether `Accept`/`_format` are checked (406) before the handler runs; false for a download in
   * a format of its own (NDJSON). Default true.
   */
  negotiate?: boolean;
  /** Status of an answer the handler returns without one (default 200). */
  status?: number;
  /** The only resource types the route serves (`:type` outside them → 404). */
  types?: readonly string[];
  /** The FHIR bases its paths lie under (default the store's `/{v}`). */
  bases?: readonly FhirBase[];
  /**
   * Whether the request takes a slot of the client's concurrency and an admission lane; bulk
   * NDJSON streams and the directory's public data are paced otherwise. Default true.
   */
  admitted?: boolean;
  /**
   * The admission lane it waits in (src/admission/request-admission.ts): `bulk` for export and
   * purge work, `read` for a POST that only reads (`_search`). Default: GET/HEAD read, the rest write.
   */
  lane?: RouteLane;
}

/** The lane a request of a route waits in: its declared lane, else the one of its method. */
export function laneOf(options: FhirRouteOptions, method: string): RouteLane {
  return options.lane ?? (method === 'GET' || method === 'HEAD' ? 'read' : 'write');
}

/** What the route guard established about a FHIR request; the parameter decorators read it. */
export interface FhirRouteState {
  options: FhirRouteOptions;
  version: FhirVersion;
  type?: string;
  id?: string;
  /** The media type negotiated from `Accept` and `_format` (routes that negotiate). */
  mediaType?: ResponseFormat;
}

/**
 * `req.fhirRoute`: the request was routed to a FHIR handler (set before any check, so that even a
 * refused version is answered as an OperationOutcome); `req.fhir`: the checked parameters.
 */
export type FhirRequest = Request & { fhirRoute?: FhirRouteOptions; fhir?: FhirRouteState };

/** The checked route state; only on handlers declared with `@FhirRoute()`. */
export function routeState(req: Request): FhirRouteState {
  const state = (req as FhirRequest).fhir;
  if (!state) throw new Error('FHIR parameter decorator used on a route without @FhirRoute()');
  return state;
}

/**
 * The bases as matchers. A request that reaches no route (an unknown path, a body the parser
 * refused) is a FHIR request when its path starts with one of them and names a FHIR version there.
 */
const BASE_MATCHERS: RegExp[] = Object.values(BASE_PREFIX).map((prefix) => {
  const pattern = prefix
    .split('/')
    .map((segment) => (segment.startsWith(':') ? `(?<${segment.slice(1)}>[^/]+)` : segment))
    .join('/');
  return new RegExp(`^/${pattern}(?:/|$)`, 'i');
});

/** Whether a path lies under a FHIR base of this server (errors there are OperationOutcomes). */
export function isFhirPath(path: string): boolean {
  for (const matcher of BASE_MATCHERS) {
    const match = matcher.exec(path);
    if (!match) continue;
    const version = match.groups?.version;
    if (version === undefined || parseFhirVersion(version)) return true;
  }
  return false;
}

/** A request routed to a FHIR handler, or one under a FHIR base that reached none. */
export function isFhirRequest(req: Request): boolean {
  return (req as FhirRequest).fhirRoute !== undefined || isFhirPath(req.path);
}
