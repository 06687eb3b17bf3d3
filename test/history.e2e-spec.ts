import request from 'supertest';
import { validateResource } from '@app/fhir';
import { bearer, clientHeaders, createAppWithUsers, TestApp, TestClient, TestUser } from '@app/testing';

/** History at instance, type and system level (https://hl7.org/fhir/R4/http.html#history). */
describe('history (e2e)', () => {
  let t: TestApp;
  let client: TestClient;
  let alice: TestUser;
  let bob: TestUser;
  let mallory: TestUser;
  const as = (user: TestUser) => bearer(user.access_token);
  const send = (method: 'post' | 'put', path: string, body: unknown, user: TestUser) =>
    (method === 'post' ? request(t.server).post(path) : request(t.server).put(path))
      .set(as(user))
      .set('Content-Type', 'application/fhir+json')
      .send(JSON.stringify(body));
  const errorsOf = (body: unknown, type = 'Bundle') =>
    validateResource('r4', body, type).filter((i) => i.severity === 'error');
  let created: Date;

  beforeAll(async () => {
    ({
      t,
      client,
      users: [alice, bob],
      strangers: [mallory],
    } = await createAppWithUsers({ users: 2, strangers: 1 }));
    created = new Date();
    await send('post', '/r4/Patient', { resourceType: 'Patient', id: 'h1', gender: 'male' }, alice).expect(
      201,
    );
    await send(
      'put',
      '/r4/Patient/h1',
      { resourceType: 'Patient', id: 'h1', gender: 'female' },
      alice,
    ).expect(200);
    await send('post', '/r4/Observation', obs('o1'), alice).expect(201);
    await request(t.server).delete('/r4/Observation/o1').set(as(alice)).expect(200);
    await send('post', '/r4/Patient', { resourceType: 'Patient', id: 'b1' }, bob).expect(201);
    await send('post', '/r4/Patient', { resourceType: 'Patient', id: 'm1' }, mallory).expect(201);
  });
  afterAll(async () => t?.close());

  function obs(id: string) {
    return { resourceType: 'Observation', id, status: 'final', code: { text: 'x' } };
  }

  it('instance history is a valid history Bundle: fullUrl without version, request and response', async () => {
    const res = await request(t.server).get('/r4/Patient/h1/_history').set(as(alice)).expect(200);
    expect(res.headers.etag).toBeUndefined();
    expect(res.body.type).toBe('history');
    expect(res.body.total).toBe(2);
    expect(errorsOf(res.body)).toEqual([]);
    const [v2, v1] = res.body.entry;
    expect(v2.fullUrl).toBe(`${t.settings.urls.base}/r4/Patient/h1`);
    expect(v2.search).toBeUndefined();
    expect(v2.request).toEqual({ method: 'PUT', url: 'Patient/h1' });
    expect(v2.response).toMatchObject({ status: '200 OK', etag: 'W/"2"' });
    expect(v1.request).toEqual({ method: 'POST', url: 'Patient' });
    expect(v1.response.lastModified).toBe(v1.resource.meta.lastUpdated);
  });

  it('a deleted version is a DELETE entry with an outcome naming id and version', async () => {
    const res = await request(t.server).get('/r4/Observation/o1/_history').set(as(alice)).expect(200);
    expect(errorsOf(res.body)).toEqual([]);
    const [deleted] = res.body.entry;
    expect(deleted.resource).toBeUndefined();
    expect(deleted.request).toEqual({ method: 'DELETE', url: 'Observation/o1' });
    expect(deleted.response.outcome.resourceType).toBe('OperationOutcome');
    expect(deleted.response.outcome.issue[0].details.text).toBe(
      'Resource Observation/o1 with version 2 has been deleted.',
    );
    expect(errorsOf(deleted.response.outcome, 'OperationOutcome')).toEqual([]);
  });

  it('type history lists every version of the type of the caller only, newest first', async () => {
    const res = await request(t.server).get('/r4/Patient/_history').set(as(alice)).expect(200);
    expect(res.body.type).toBe('history');
    expect(errorsOf(res.body)).toEqual([]);
    const versions = res.body.entry.map((e: any) => `${e.resource.id}/${e.resource.meta.versionId}`);
    expect(versions).toEqual(['h1/2', 'h1/1']);
    // client-wide reads see every user of the client, never another client
    const all = await request(t.server)
      .get('/r4/Patient/_history')
      .set(clientHeaders(client, 'client'))
      .expect(200);
    expect(all.body.entry.map((e: any) => e.resource.id).sort()).toEqual(['b1', 'h1', 'h1']);
  });

  it('ETags only on resource responses (W/"versionId"), none from Express on bundles or errors', async () => {
    const search = await request(t.server).get('/r4/Patient').set(as(alice)).expect(200);
    expect(search.headers.etag).toBeUndefined();
    const count = await request(t.server).get('/r4/Patient?_summary=count').set(as(alice)).expect(200);
    expect(count.body).not.toHaveProperty('entry');
    const missing = await request(t.server).get('/r4/Patient/nope').set(as(alice)).expect(404);
    expect(missing.headers.etag).toBeUndefined();
    const read = await request(t.server).get('/r4/Patient/h1').set(as(alice)).expect(200);
    expect(read.headers.etag).toBe('W/"2"');
  });

  it('system history includes every type, Provenances and deletes; pages with links', async () => {
    const res = await request(t.server).get('/r4/_history?_count=2').set(as(alice)).expect(200);
    expect(res.body.type).toBe('history');
    // h1 ×2, o1 ×2, and one Provenance per create/update (3)
    expect(res.body.total).toBe(7);
    expect(res.body.entry).toHaveLength(2);
    const next = res.body.link.find((l: any) => l.relation === 'next').url as string;
    expect(next).toContain('/r4/_history?');
    const seen: string[] = [];
    let url: string | undefined = `/r4/_history?_count=2`;
    while (url) {
      const page: any = await request(t.server).get(url).set(as(alice)).expect(200);
      for (const e of page.body.entry ?? []) seen.push(`${e.request.method} ${e.request.url}`);
      const link = page.body.link.find((l: any) => l.relation === 'next');
      url = link ? link.url.replace(t.settings.urls.base, '') : undefined;
    }
    expect(seen).toHaveLength(7);
    expect(seen).toContain('DELETE Observation/o1');
    expect(seen.filter((s) => s.startsWith('POST Provenance'))).toHaveLength(3);
  });

  it('_since in the future → an empty history (no entry array); a bad _since → 400', async () => {
    const future = new Date(Date.now() + 86_400_000).toISOString();
    const res = await request(t.server)
      .get(`/r4/Patient/h1/_history?_since=${encodeURIComponent(future)}`)
      .set(as(alice))
      .expect(200);
    expect(res.body.total).toBe(0);
    expect(res.body).not.toHaveProperty('entry');
    expect(errorsOf(res.body)).toEqual([]);
    const type = await request(t.server)
      .get(`/r4/_history?_since=${encodeURIComponent(future)}`)
      .set(as(alice))
      .expect(200);
    expect(type.body.total).toBe(0);
    const bad = await request(t.server).get('/r4/_history?_since=yesterday').set(as(alice)).expect(400);
    expect(bad.body.resourceType).toBe('OperationOutcome');
    expect(bad.headers.etag).toBeUndefined();
    await request(t.server).get('/r4/_history?name=x').set(as(alice)).expect(400);
  });

  it('_since and _at select versions by time', async () => {
    const since = await request(t.server)
      .get(`/r4/Patient/_history?_since=${encodeURIComponent(created.toISOString())}`)
      .set(as(alice))
      .expect(200);
    expect(since.body.total).toBe(2);
    // _at = the instant of version 1 of h1: version 1 was current then, and version 2 came later
    const v1 = await request(t.server).get('/r4/Patient/h1/_history/1').set(as(alice)).expect(200);
    const at = await request(t.server)
      .get(`/r4/Patient/h1/_history?_at=${encodeURIComponent(v1.body.meta.lastUpdated)}`)
      .set(as(alice))
      .expect(200);
    expect(at.body.entry.map((e: any) => e.resource.meta.versionId)).toEqual(['1']);
    const laterAt = await request(t.server)
      .get(`/r4/Patient/h1/_history?_at=${new Date().getUTCFullYear()}`)
      .set(as(alice))
      .expect(200);
    expect(laterAt.body.total).toBe(2);
  });

  it('other clients see nothing; unknown resource → 404', async () => {
    const res = await request(t.server).get('/r4/Patient/_history').set(as(mallory)).expect(200);
    expect(res.body.entry.map((e: any) => e.resource.id)).toEqual(['m1']);
    await request(t.server).get('/r4/Patient/h1/_history').set(as(mallory)).expect(404);
  });

  it('type and system history use an index, with the tenant keys in the filter', async () => {
    const explain: any = await t.connection.db!.command({
      explain: {
        find: 'resource_history',
        filter: { v: 'r4', c: client.client_id, u: alice.service_user_id, t: 'Patient' },
        sort: { lu: -1, _id: -1 },
      },
    });
    expect(JSON.stringify(explain)).not.toMatch(/COLLSCAN/);
  });
});
