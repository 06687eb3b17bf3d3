import request from 'supertest';
import { createTestApp, TestApp } from '@app/testing';
import { bearer, createClient, createUser } from '@app/testing/factories';

describe('foundation (e2e)', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp({ BODY_LIMIT: '2kb' });
  });
  afterAll(async () => t?.close());

  it('GET /health answers ok once the database answers', async () => {
    const res = await request(t.server).get('/health').expect(200);
    expect(res.body).toEqual({ status: 'ok' });
  });

  it('echoes a sane incoming x-request-id and makes one otherwise', async () => {
    const a = await request(t.server).get('/health').set('x-request-id', 'abc-123');
    expect(a.headers['x-request-id']).toBe('abc-123');
    const b = await request(t.server).get('/health').set('x-request-id', 'bad id with spaces');
    expect(b.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('unknown non-FHIR route → 404 { error, message }', async () => {
    const res = await request(t.server).get('/no/such/route').expect(404);
    expect(res.body).toEqual({ error: 'not_found', message: expect.any(String) });
  });

  it('unknown FHIR route → 404 OperationOutcome', async () => {
    const res = await request(t.server).get('/r4/Nope/1/2/3/4').expect(404);
    expect(res.headers['content-type']).toMatch(/application\/fhir\+json/);
    expect(res.body.resourceType).toBe('OperationOutcome');
    expect(res.body.issue[0].code).toBe('not-found');
  });

  it('malformed JSON → 400, never 500', async () => {
    const user = await createUser(t, await createClient(t));
    const res = await request(t.server)
      .post('/r4/Patient')
      .set(bearer(user.access_token))
      .set('Content-Type', 'application/fhir+json')
      .send('{"resourceType": "Patient",')
      .expect(400);
    expect(res.body.resourceType).toBe('OperationOutcome');
    expect(JSON.stringify(res.body)).not.toMatch(/at .*\.js:\d+/);
    // without credentials the body is never parsed: the 401 comes first (docs/security.md)
    const anonymous = await request(t.server)
      .post('/r4/Patient')
      .set('Content-Type', 'application/fhir+json')
      .send('{"resourceType": "Patient",')
      .expect(401);
    expect(anonymous.body.resourceType).toBe('OperationOutcome');
  });

  it('a body over the limit → 413', async () => {
    const big = JSON.stringify({ resourceType: 'Patient', text: 'x'.repeat(4096) });
    const res = await request(t.server)
      .post('/user-management/v1/user')
      .set('Content-Type', 'application/json')
      .send(big);
    expect(res.status).toBe(413);
    expect(res.body.error).toBe('payload_too_large');
  });

  it('serves the OpenAPI document and the Swagger UI', async () => {
    const json = await request(t.server).get('/docs-json').expect(200);
    expect(json.body.openapi).toMatch(/^3\./);
    expect(json.body.paths['/health']).toBeDefined();
    expect(json.body.components.securitySchemes.bearer).toBeDefined();
    const ui = await request(t.server).get('/docs').redirects(1).expect(200);
    expect(ui.text).toContain('swagger');
  });

  it('sets security headers', async () => {
    const res = await request(t.server).get('/health');
    expect(res.headers['x-content-type-options']).toBe('nosniff');
    expect(res.headers['x-powered-by']).toBeUndefined();
  });
});
