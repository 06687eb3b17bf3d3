import 'reflect-metadata';
import { METHOD_METADATA, PATH_METADATA } from '@nestjs/common/constants';
import { RequestMethod, type Type } from '@nestjs/common';
import { FHIR_ROUTE, laneOf, type FhirRouteOptions } from '../fhir-http/fhir-route-state';
import { CompartmentSearchController } from './fhir-store/search/compartment-search.controller';
import { FHIR_CONTROLLERS } from './fhir-routes.module';

interface DeclaredRoute {
  method: string;
  matcher: RegExp;
  options: FhirRouteOptions;
}

/** `:name` matches one segment (`:token.ndjson` one ending in `.ndjson`), as Express matches it. */
function matcherOf(path: string): RegExp {
  const pattern = path
    .replace(/^\/+/, '')
    .split('/')
    .map((segment) =>
      segment
        .split(/(:\w+)/)
        .map((part) => (part.startsWith(':') ? '[^/]+' : part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')))
        .join(''),
    )
    .join('/');
  return new RegExp(`^/${pattern}/?$`, 'i');
}

/** Every FHIR route of the store's controllers, in the order Express tries them. */
function declaredRoutes(controllers: Type[]): DeclaredRoute[] {
  const routes: DeclaredRoute[] = [];
  for (const controller of controllers) {
    const proto = controller.prototype as object;
    for (const key of Object.getOwnPropertyNames(proto)) {
      const handler = Object.getOwnPropertyDescriptor(proto, key)?.value as unknown;
      if (key === 'constructor' || typeof handler !== 'function') continue;
      const paths = Reflect.getMetadata(PATH_METADATA, handler) as string | string[] | undefined;
      const options = Reflect.getMetadata(FHIR_ROUTE, handler) as FhirRouteOptions | undefined;
      if (paths === undefined || options === undefined) continue;
      const method = RequestMethod[Reflect.getMetadata(METHOD_METADATA, handler) as RequestMethod];
      for (const path of [paths].flat()) routes.push({ method, matcher: matcherOf(path), options });
    }
  }
  return routes;
}

/**
 * The admission lane of a request comes from the route that serves it (`@FhirRoute`'s `lane`, else
 * its method): reads and writes wait apart; bulk export and purge wait in neither.
 */
describe('admission lanes of the FHIR routes', () => {
  // compartment searches (their own module, registered before the store's controllers)
  const routes = declaredRoutes([CompartmentSearchController, ...FHIR_CONTROLLERS]);

  it.each([
    ['GET', '/r4/Patient/1', 'read'],
    ['HEAD', '/r4/Patient', 'read'],
    ['POST', '/r4/Observation/_search', 'read'],
    ['POST', '/r4/Patient/1/Observation/_search', 'read'],
    ['POST', '/r4/Patient', 'write'],
    ['PUT', '/stu3/Patient/1', 'write'],
    ['PATCH', '/r4/Patient/1', 'write'],
    ['DELETE', '/r4/Patient/1', 'write'],
    ['POST', '/r4', 'write'],
    ['GET', '/r4/$export', 'bulk'],
    ['GET', '/r4/Patient/$export', 'bulk'],
    ['POST', '/r4/Group/g1/$export', 'bulk'],
    ['GET', '/r4/$export-status/abc', 'bulk'],
    ['DELETE', '/r4/$export-status/abc', 'bulk'],
    ['GET', '/bulk-data/r4/$export/Patient/tok.ndjson', 'bulk'],
    ['GET', '/v1/acme/bulk-export/bulk-data/r4/$export', 'bulk'],
    ['DELETE', '/r4/purge', 'bulk'],
    ['GET', '/r4/Patient/$everything', 'read'],
    ['POST', '/r4/Patient/$everything', 'write'],
  ])('%s %s → %s', (method, path, lane) => {
    // Express serves HEAD with the GET route
    const routed = method === 'HEAD' ? 'GET' : method;
    const route = routes.find((r) => r.method === routed && r.matcher.test(path));
    expect(route).toBeDefined();
    expect(laneOf(route!.options, method)).toBe(lane);
  });
});
