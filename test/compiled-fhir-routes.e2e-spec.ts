import type { INestApplication } from '@nestjs/common';
import request from 'supertest';
import { createApp } from '../src/create-app';
import type { FhirExpressAdapter } from '../src/fhir-http/fhir-express-adapter';
import {
  bearer,
  createClient,
  createTestApp,
  createUser,
  IDENTITY_TEST_ENV,
  TestApp,
  TestUser,
} from '@app/testing';

/** A request, as sent to either app. */
type Exchange = (server: Parameters<typeof request>[0]) => request.Test;

/** What differs between two answers that are the same (a new resource's id, a Bundle's time). */
type Volatile = (body: Record<string, unknown>, headers: Record<string, unknown>) => void;

/** What a client sees of an answer, without what differs between any two answers (date, request id). */
function seen(res: request.Response, volatile: Volatile = () => undefined) {
  const headers: Record<string, unknown> = { ...res.headers };
  delete headers.date;
  delete headers['x-request-id'];
  const body = (res.body ?? {}) as Record<string, unknown>;
  volatile(body, headers);
  return {
    status: res.status,
    headers,
    body,
    text: res.text?.length > 0 && Object.keys(body).length === 0 ? res.text : '',
  };
}

/** A Bundle's own id and time are the moment's; its entries are compared. */
const bundleVolatile: Volatile = (body) => {
  delete body.id;
  delete body.meta;
};

/** A resource created by the exchange: its id, time and Location are its own. */
const createdVolatile: Volatile = (body, headers) => {
  delete body.id;
  delete body.meta;
  delete headers.location;
  delete headers['last-modified'];
};

/**
 * The app's FHIR routes run handlers compiled for them (src/fhir-http/compiled-fhir-route.ts)
 * instead of Nest's request pipeline. Each exchange here goes to the app and to a second app on the
 * same database that keeps every route on Nest's pipeline (`createApp(..., { nestRoutes: true })`);
 * the answers must be the same: status, headers (but the date and request id) and body, for the
 * guard's refusals, the parameter decorators' errors, the handler's errors, and answers.
 */
describe('compiled FHIR routes answer as Nest’s pipeline (e2e)', () => {
  let t: TestApp;
  let nest: INestApplication;
  let alice: TestUser;
  let id: string;
  const auth = () => bearer(alice.access_token);

  async function same(exchange: Exchange, volatile?: Volatile) {
    const compiled = seen(await exchange(t.server), volatile);
    const byNest = seen(await exchange(nest.getHttpServer()), volatile);
    expect(compiled).toEqual(byNest);
    return compiled;
  }

  beforeAll(async () => {
    t = await createTestApp(IDENTITY_TEST_ENV);
    const uri = process.env.TEST_MONGO_URL!;
    nest = await createApp(t.settings, { uri, engine: 'external', stop: async () => undefined }, t.dbName, {
      nestRoutes: true,
    });
    await nest.init();
    alice = await createUser(t, await createClient(t));
    const created = await request(t.server)
      .post('/r4/Patient')
      .set(auth())
      .send({ resourceType: 'Patient', gender: 'female', identifier: [{ system: 'urn:s', value: 'c1' }] })
      .expect(201);
    id = created.body.id as string;
  });
  afterAll(async () => {
    await nest?.close();
    await t?.close();
  });

  it('compiles every FHIR route of the app, and none where asked for Nest’s pipeline', () => {
    const routes = (t.app.getHttpAdapter() as FhirExpressAdapter).fhirRoutes;
    // only the NDJSON downloads, which stream through the response object (@Res())
    expect(routes.byNest.length).toBeGreaterThan(0);
    for (const route of routes.byNest) {
      expect(route).toEqual({
        path: expect.stringMatching(/^GET .*:token\.ndjson$/),
        reason: 'parameter RESPONSE',
      });
    }
    expect(routes.compiled).toEqual(
      expect.arrayContaining([
        'GET /:version/:type/:id',
        'POST /:version/:type',
        'GET /:version/:type/:id/_history/:vid',
        'GET /:version/metadata',
      ]),
    );
    expect(routes.compiled.length).toBeGreaterThan(40);
    expect((nest.getHttpAdapter() as FhirExpressAdapter).fhirRoutes.compiled).toEqual([]);
  });

  it('a token not cached yet (the guard awaits its lookup), then cached (the guard answers at once)', async () => {
    const bob = await createUser(t, await createClient(t));
    const read: Exchange = (server) => request(server).get(`/r4/Patient/${id}`).set(bearer(bob.access_token));
    // bob's client is another tenant: the read is refused alike, uncached then cached
    expect((await same(read)).status).toBe(404);
    expect((await same(read)).status).toBe(404);
  });

  it('reads: the resource with its ETag and Last-Modified, shaped, HEAD, conditional, versioned', async () => {
    const read = await same((s) => request(s).get(`/r4/Patient/${id}`).set(auth()));
    expect(read.status).toBe(200);
    expect(read.headers.etag).toBe('W/"1"');
    expect(read.headers['last-modified']).toBeDefined();
    const shaped = await same((s) => request(s).get(`/r4/Patient/${id}?_elements=gender`).set(auth()));
    expect(shaped.body).not.toHaveProperty('identifier');
    expect((await same((s) => request(s).head(`/r4/Patient/${id}`).set(auth()))).status).toBe(200);
    const unchanged = await same((s) =>
      request(s).get(`/r4/Patient/${id}`).set(auth()).set('If-None-Match', 'W/"1"'),
    );
    expect(unchanged.status).toBe(304);
    expect(
      (await same((s) => request(s).get(`/r4/Patient/${id}/_history/1`).set(auth()))).body,
    ).toMatchObject({ id, meta: { versionId: '1' } });
    // DSTU2's media type, also on an error
    const dstu2 = await same((s) => request(s).get('/dstu2/Patient/nobody').set(auth()));
    expect(dstu2.status).toBe(404);
    expect(dstu2.headers['content-type']).toMatch(/^application\/json\+fhir/);
  });

  it('the guard’s refusals and the handler’s errors as OperationOutcomes', async () => {
    const cases: Array<[Exchange, number]> = [
      [(s) => request(s).get(`/r4/Patient/${id}`), 401],
      [(s) => request(s).get(`/r4/Patient/${id}`).set(bearer('not-a-token')), 401],
      [(s) => request(s).get('/r4/Nonsense/1').set(auth()), 404],
      [(s) => request(s).get('/r9/Patient/1').set(auth()), 404],
      [(s) => request(s).get('/r4/Patient/bad$id').set(auth()), 400],
      [(s) => request(s).get(`/r4/Patient/${id}`).set(auth()).set('Accept', 'application/xml'), 406],
      [(s) => request(s).get('/r4/Patient/nobody').set(auth()), 404],
      [(s) => request(s).get(`/r4/Patient/${id}/_history/9`).set(auth()), 404],
      // @FhirResourceBody() throws in the parameter step
      [
        (s) =>
          request(s)
            .post('/r4/Patient')
            .set(auth())
            .send([{ resourceType: 'Patient' }]),
        400,
      ],
      [(s) => request(s).post('/r4/Patient').set(auth()).set('Content-Type', 'text/plain').send('x'), 415],
    ];
    for (const [exchange, status] of cases) {
      const answer = await same(exchange);
      expect(answer.status).toBe(status);
      expect(answer.body).toMatchObject({ resourceType: 'OperationOutcome' });
    }
  });

  it('POST answers 201; header, search and operation parameters reach the handler', async () => {
    const created = await same(
      (s) =>
        request(s)
          .post('/r4/Observation')
          .set(auth())
          .send({ resourceType: 'Observation', status: 'final', code: { text: 'x' } }),
      createdVolatile,
    );
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ resourceType: 'Observation', status: 'final' });
    // conditional create (@Headers('if-none-exist')): the match is answered, nothing is created
    const matched = await same((s) =>
      request(s)
        .post('/r4/Patient')
        .set(auth())
        .set('If-None-Exist', 'identifier=urn:s|c1')
        .send({ resourceType: 'Patient' }),
    );
    expect(matched.status).toBe(200);
    expect(matched.body).toMatchObject({ id });
    const found = await same(
      (s) => request(s).get('/r4/Patient?identifier=urn:s|c1').set(auth()),
      bundleVolatile,
    );
    expect(found.body).toMatchObject({ resourceType: 'Bundle', total: 1 });
    // an operation's GET and its twin handler for POST
    for (const method of ['get', 'post'] as const) {
      const meta = await same((s) => request(s)[method](`/r4/Patient/${id}/$meta`).set(auth()));
      expect(meta.body).toMatchObject({ resourceType: 'Parameters' });
    }
  });
});
