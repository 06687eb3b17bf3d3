import request from 'supertest';
import { createTestApp, TestApp } from '@app/testing';

/** Sample values for the path parameters of the app's routes. */
const SAMPLE: Record<string, string> = {
  version: 'r4',
  type: 'Observation',
  id: 'id1',
  vid: '2',
  customer: 'acme',
  groupId: 'g1',
  jobId: 'job1',
  token: 'tok',
};

interface RouteLayer {
  name: string;
  route?: { path: string; methods: Record<string, boolean> };
  match(path: string): boolean;
}

/**
 * Express tries routes in the order they were registered; a generic path (`/:version/:type/:id`)
 * registered before a fixed one (`/:version/Patient/$everything`) would take its requests. For each
 * route, a request built from its own path must reach that route first.
 */
describe('FHIR route order (e2e)', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(async () => t?.close());

  it('no route is shadowed by one registered before it', () => {
    const express = t.app.getHttpAdapter().getInstance() as { router: { stack: RouteLayer[] } };
    // middleware mounted for every path (`/{*path}`) and the Swagger UI pass requests on
    const routes = express.router.stack.filter(
      (layer) => layer.route && !layer.route.path.includes('{*') && !layer.route.path.startsWith('/docs'),
    );
    expect(routes.length).toBeGreaterThan(40);
    const shadowed: string[] = [];
    routes.forEach((layer, index) => {
      const route = layer.route!;
      // `\*` is a literal `*` in a path (path-to-regexp 8), as in `/{v}/Patient/{id}/*`
      const path = route.path
        .replace(/:(\w+)/g, (_m, name: string) => SAMPLE[name] ?? `p-${name}`)
        .replace(/\\(.)/g, '$1');
      for (const method of Object.keys(route.methods)) {
        const first = routes.findIndex((other) => other.route!.methods[method] && other.match(path));
        if (first !== index)
          shadowed.push(`${method.toUpperCase()} ${route.path} ← ${routes[first]?.route?.path}`);
      }
    });
    expect(shadowed).toEqual([]);
  });

  it('finds the routes through its route table, in front of the first route after the middleware', () => {
    const express = t.app.getHttpAdapter().getInstance() as { router: { stack: RouteLayer[] } };
    const stack = express.router.stack;
    const at = stack.findIndex((layer) => layer.name === 'routeTable');
    expect(at).toBeGreaterThan(0);
    expect(stack[at].route).toBeUndefined();
    expect(stack[at - 1].route).toBeUndefined();
    expect(stack.slice(at + 1).filter((layer) => layer.route).length).toBeGreaterThan(40);
  });

  it("keeps Swagger's routes and files out of the app's router, entered by /docs paths only", async () => {
    const express = t.app.getHttpAdapter().getInstance() as { router: { stack: RouteLayer[] } };
    const stack = express.router.stack;
    expect(stack.filter((layer) => layer.route?.path.toLowerCase().startsWith('/docs'))).toEqual([]);
    // the gate is a step of the app's one middleware layer, not a layer of the app's router
    expect(stack.filter((layer) => layer.name === 'docsGate')).toEqual([]);
    // served as before: its routes (in any case, as Express matches), its static files, its UI
    const json = await request(t.server).get('/DOCS-json').expect(200);
    expect(json.body.openapi).toBeDefined();
    await request(t.server).get('/docs/swagger-ui.css').expect(200).expect('Content-Type', /css/);
    const ui = await request(t.server).get('/docs').redirects(1).expect(200);
    expect(ui.text).toContain('swagger-ui');
    await request(t.server).get('/docs/no-such-file.js').expect(404);
  });
});
