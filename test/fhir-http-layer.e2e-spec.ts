import request from 'supertest';
import { createTestApp, TestApp } from '@app/testing';
import { bearer, createClient, createUser, TestUser } from '@app/testing/factories';

/** The one FHIR HTTP layer (src/fhir-http): errors by route, reply shaping, operations by metadata. */
describe('FHIR HTTP layer (e2e)', () => {
  let t: TestApp;
  let user: TestUser;
  let patientId: string;
  beforeAll(async () => {
    t = await createTestApp({ USER_MGMT_RATE_LIMIT: '100000' });
    user = await createUser(t, await createClient(t));
    const created = await request(t.server)
      .post('/r4/Patient')
      .set(bearer(user.access_token))
      .set('Content-Type', 'application/fhir+json')
      .send(
        JSON.stringify({
          resourceType: 'Patient',
          gender: 'female',
          birthDate: '1970-01-01',
          name: [{ family: 'Shape' }],
          text: { status: 'generated', div: '<div xmlns="http://www.w3.org/1999/xhtml">x</div>' },
        }),
      )
      .expect(201);
    patientId = created.body.id;
  });
  afterAll(async () => t?.close());

  const get = (path: string) => request(t.server).get(path).set(bearer(user.access_token));

  describe('errors of routes that matched answer OperationOutcomes, whatever the version segment', () => {
    it('POST /r9/Patient/$validate → 404 OperationOutcome', async () => {
      const res = await request(t.server)
        .post('/r9/Patient/$validate')
        .set(bearer(user.access_token))
        .send({ resourceType: 'Patient' })
        .expect(404);
      expect(res.headers['content-type']).toMatch(/^application\/fhir\+json/);
      expect(res.body.resourceType).toBe('OperationOutcome');
      expect(res.body.issue[0].diagnostics).toMatch(/r9/);
    });

    it('an unknown type at an operation → 404, an unsupported Accept → 406, both before credentials', async () => {
      const unknown = await request(t.server).post('/r4/Nope/$validate').expect(404);
      expect(unknown.body.resourceType).toBe('OperationOutcome');
      const xml = await request(t.server)
        .post('/r4/Patient/$validate')
        .set('Accept', 'application/fhir+xml')
        .expect(406);
      expect(xml.body.resourceType).toBe('OperationOutcome');
    });

    it('a body without credentials is answered 401 first, before its type or Accept is looked at', async () => {
      // its body is never parsed (docs/security.md): the 401 comes before the route's own checks
      for (const res of [
        await request(t.server).post('/r4/Nope/$validate').send({}),
        await request(t.server).post('/r4/Patient/$validate').set('Accept', 'application/fhir+xml').send({}),
      ]) {
        expect(res.status).toBe(401);
        expect(res.body.resourceType).toBe('OperationOutcome');
        expect(res.headers['www-authenticate']).toMatch(/^Bearer/);
      }
    });

    it.each([
      ['r4', '/r4/Patient/$validate', 'application/fhir+json'],
      ['r4', '/r4/Patient/{id}/$everything', 'application/fhir+json'],
      ['dstu2', '/dstu2/Patient/$validate', 'application/json+fhir'],
    ])(
      'an operation POSTed with an XML body (%s %s) → 415 OperationOutcome in the version media type',
      async (_, path, type) => {
        const res = await request(t.server)
          .post(path.replace('{id}', patientId))
          .set(bearer(user.access_token))
          .set('Content-Type', 'application/fhir+xml')
          .send('<Parameters xmlns="http://hl7.org/fhir"/>')
          .expect(415);
        expect(res.headers['content-type']).toBe(`${type}; charset=utf-8`);
        expect(res.body.resourceType).toBe('OperationOutcome');
        expect(res.body.issue[0].code).toBe('not-supported');
      },
    );

    it('a path that only a generic route matches, outside any FHIR version, stays a plain 404', async () => {
      const res = await request(t.server).get('/no/such/route').expect(404);
      expect(res.body).toEqual({ error: 'not_found', message: expect.any(String) });
    });
  });

  describe('_elements and _summary on a read', () => {
    it('_elements keeps the listed elements (and id, meta), tagged SUBSETTED', async () => {
      const res = await get(`/r4/Patient/${patientId}?_elements=gender`).expect(200);
      expect(Object.keys(res.body).sort()).toEqual(['gender', 'id', 'meta', 'resourceType']);
      expect(res.body.meta.tag).toEqual([expect.objectContaining({ code: 'SUBSETTED' })]);
      // a subset is not version 1 itself: a weak ETag of its own (docs/api.md)
      expect(res.headers.etag).toMatch(/^W\/"1-[A-Za-z0-9_-]+"$/);
    });

    it('_summary=true keeps the summary elements; text keeps the narrative only; false the whole', async () => {
      const summary = await get(`/r4/Patient/${patientId}?_summary=true`).expect(200);
      expect(summary.body.name).toBeDefined();
      expect(summary.body.text).toBeUndefined();
      const text = await get(`/r4/Patient/${patientId}?_summary=text`).expect(200);
      expect(text.body.text).toBeDefined();
      expect(text.body.gender).toBeUndefined();
      const whole = await get(`/r4/Patient/${patientId}?_summary=false`).expect(200);
      expect(whole.body.gender).toBe('female');
      expect(whole.body.meta.tag).toBeUndefined();
    });

    it('also on a versioned read; a bad value → 400', async () => {
      const vread = await get(`/r4/Patient/${patientId}/_history/1?_elements=birthDate`).expect(200);
      expect(vread.body.birthDate).toBe('1970-01-01');
      expect(vread.body.gender).toBeUndefined();
      const bad = await get(`/r4/Patient/${patientId}?_summary=maybe`).expect(400);
      expect(bad.body.resourceType).toBe('OperationOutcome');
      await get(`/r4/Patient/${patientId}?_elements=no%20such`).expect(400);
    });
  });

  it('history _since whose + arrived unescaped (a space) is read as the offset', async () => {
    const res = await get('/r4/Patient/_history?_since=2000-01-01T00:00:00+00:00').expect(200);
    expect(res.body.total).toBeGreaterThanOrEqual(1);
    const instance = await get(`/r4/Patient/${patientId}/_history?_since=2000-01-01T00:00:00+01:00`).expect(
      200,
    );
    expect(instance.body.entry).toHaveLength(1);
  });

  // https://hl7.org/fhir/R4/http.html#cread: a client that holds a version asks whether it changed
  describe('conditional read (If-None-Match, If-Modified-Since)', () => {
    it('the current version named in If-None-Match → 304 without a body, another version → 200', async () => {
      const first = await get(`/r4/Patient/${patientId}`).expect(200);
      const etag = first.headers.etag;
      expect(etag).toMatch(/^W\/"\d+"$/);
      const same = await get(`/r4/Patient/${patientId}`).set('If-None-Match', etag).expect(304);
      expect(same.text ?? '').toBe('');
      expect(same.headers.etag).toBe(etag);
      await get(`/r4/Patient/${patientId}`).set('If-None-Match', 'W/"999"').expect(200);
      // a version read (vread) of the same version answers the same way
      const version = /"(\d+)"/.exec(etag)![1];
      await get(`/r4/Patient/${patientId}/_history/${version}`).set('If-None-Match', etag).expect(304);
    });

    it('If-Modified-Since at or after Last-Modified → 304, before it → 200', async () => {
      const first = await get(`/r4/Patient/${patientId}`).expect(200);
      const lastModified = new Date(first.headers['last-modified']);
      await get(`/r4/Patient/${patientId}`).set('If-Modified-Since', lastModified.toUTCString()).expect(304);
      const before = new Date(lastModified.getTime() - 60_000).toUTCString();
      const changed = await get(`/r4/Patient/${patientId}`).set('If-Modified-Since', before).expect(200);
      expect(changed.body.id).toBe(patientId);
    });

    it('after an update the old ETag reads the new version (200)', async () => {
      const first = await get(`/r4/Patient/${patientId}`).expect(200);
      const updated = await request(t.server)
        .put(`/r4/Patient/${patientId}`)
        .set(bearer(user.access_token))
        .set('Content-Type', 'application/fhir+json')
        .send(JSON.stringify({ ...first.body, gender: 'other' }))
        .expect(200);
      expect(updated.headers.etag).not.toBe(first.headers.etag);
      const fresh = await get(`/r4/Patient/${patientId}`)
        .set('If-None-Match', first.headers.etag)
        .expect(200);
      expect(fresh.body.gender).toBe('other');
      expect(fresh.headers.etag).toBe(updated.headers.etag);
    });
  });

  describe('the reply as written', () => {
    const create = (resource: object, prefer?: string) => {
      const post = request(t.server)
        .post('/r4/Patient')
        .set(bearer(user.access_token))
        .set('Content-Type', 'application/fhir+json');
      return (prefer ? post.set('Prefer', prefer) : post).send(JSON.stringify(resource));
    };

    it('a read declares its length in bytes (UTF-8), its media type with charset, ETag and Last-Modified', async () => {
      const created = await create({ resourceType: 'Patient', name: [{ family: 'Ünïcødé 患者' }] }).expect(
        201,
      );
      const res = await get(`/r4/Patient/${created.body.id}`).expect(200);
      expect(res.headers['content-type']).toBe('application/fhir+json; charset=utf-8');
      expect(Number(res.headers['content-length'])).toBe(Buffer.byteLength(res.text));
      expect(res.text.length).toBeLessThan(Buffer.byteLength(res.text));
      expect(res.body.name[0].family).toBe('Ünïcødé 患者');
      expect(res.headers.etag).toBe('W/"1"');
      expect(new Date(res.headers['last-modified']).getTime()).not.toBeNaN();
      // security and cache headers set ahead of the route are kept
      expect(res.headers['x-content-type-options']).toBe('nosniff');
      expect(res.headers['cache-control']).toBe('private');
      expect(res.headers['x-request-id']).toBeDefined();
    });

    it('HEAD answers the headers of the GET without its body; a conditional HEAD → 304', async () => {
      const got = await get(`/r4/Patient/${patientId}`).expect(200);
      const head = await request(t.server)
        .head(`/r4/Patient/${patientId}`)
        .set(bearer(user.access_token))
        .expect(200);
      expect(head.text ?? '').toBe('');
      for (const name of ['content-type', 'content-length', 'etag', 'last-modified'])
        expect([name, head.headers[name]]).toEqual([name, got.headers[name]]);
      await request(t.server)
        .head(`/r4/Patient/${patientId}`)
        .set(bearer(user.access_token))
        .set('If-None-Match', got.headers.etag)
        .expect(304);
    });

    it('an answer without a body (Prefer: return=minimal) says Content-Length: 0, and a 304 no media type', async () => {
      const minimal = await create({ resourceType: 'Patient', gender: 'male' }, 'return=minimal').expect(201);
      expect(minimal.headers['content-length']).toBe('0');
      expect(minimal.headers['transfer-encoding']).toBeUndefined();
      expect(minimal.headers.location).toMatch(/\/r4\/Patient\/[^/]+\/_history\/1$/);
      const id = /Patient\/([^/]+)\//.exec(minimal.headers.location)![1];
      const held = await get(`/r4/Patient/${id}`).set('If-None-Match', 'W/"1"').expect(304);
      expect(held.headers['content-type']).toBeUndefined();
      expect(held.headers.etag).toBe('W/"1"');
    });

    it('_pretty=true indents the stored JSON; the same bytes otherwise', async () => {
      const plain = await get(`/r4/Patient/${patientId}`).expect(200);
      const pretty = await get(`/r4/Patient/${patientId}?_pretty=true`).expect(200);
      expect(pretty.text).toBe(JSON.stringify(JSON.parse(plain.text), null, 2));
      expect(Number(pretty.headers['content-length'])).toBe(Buffer.byteLength(pretty.text));
    });
  });

  describe('operations by metadata', () => {
    it('Patient/$everything answers POST as GET (a Parameters body or none)', async () => {
      const viaGet = await get(`/r4/Patient/${patientId}/$everything`).expect(200);
      const viaPost = await request(t.server)
        .post(`/r4/Patient/${patientId}/$everything`)
        .set(bearer(user.access_token))
        .set('Content-Type', 'application/fhir+json')
        .send(
          JSON.stringify({ resourceType: 'Parameters', parameter: [{ name: '_count', valueInteger: 5 }] }),
        )
        .expect(200);
      expect(viaPost.headers['content-type']).toMatch(/^application\/fhir\+json/);
      expect(viaPost.body.type).toBe('searchset');
      const ids = (b: any) => b.entry.map((e: any) => e.fullUrl);
      expect(ids(viaPost.body)).toEqual(ids(viaGet.body));
      await request(t.server)
        .post(`/r4/Observation/${patientId}/$everything`)
        .set(bearer(user.access_token))
        .expect(404);
    });

    it('the CapabilityStatement lists every registered operation at its levels', async () => {
      const res = await request(t.server).get('/r4/metadata').expect(200);
      const rest = res.body.rest[0];
      const typeOps = (type: string) =>
        (rest.resource.find((r: any) => r.type === type).operation ?? []).map((o: any) => o.name);
      expect(typeOps('Patient')).toEqual(expect.arrayContaining(['everything', 'validate', 'export']));
      expect(typeOps('Group')).toEqual(expect.arrayContaining(['export', 'validate']));
      expect(typeOps('Observation')).toEqual(expect.arrayContaining(['validate', 'meta']));
      expect(rest.operation.map((o: any) => o.name)).toEqual(expect.arrayContaining(['export', 'purge']));
    });
  });
});
