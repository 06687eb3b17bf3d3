import request from 'supertest';
import { createClient, createTestApp, TestApp, TestClient } from '@app/testing';

/** /connect/system/clinical (docs/api.md §11), on the shipped seed (203 hospitals, 9 payers × 2). */
describe('clinical system list (e2e)', () => {
  let t: TestApp;
  let client: TestClient;
  let other: TestClient;

  beforeAll(async () => {
    t = await createTestApp();
    client = await createClient(t);
    other = await createClient(t);
  });
  afterAll(async () => t?.close());

  const creds = (c: TestClient) => ({ client_id: c.client_id, client_secret: c.client_secret });
  const names = (res: request.Response) => (res.body as { name: string }[]).map((e) => e.name);

  it('GET with client headers: the health systems, by name, with X-Total-Count', async () => {
    const res = await request(t.server).get('/connect/system/clinical').set(creds(client)).expect(200);
    expect(res.body).toHaveLength(203);
    expect(res.headers['x-total-count']).toBe('203');
    expect(new Set(res.body.map((e: { system_type: string }) => e.system_type))).toEqual(
      new Set(['HealthSystem']),
    );
    const sorted = [...names(res)].sort((a, b) => (a.toLowerCase() < b.toLowerCase() ? -1 : 1));
    expect(names(res).map((n) => n.toLowerCase())).toEqual(sorted.map((n) => n.toLowerCase()));
  });

  it('GET with query credentials, systemType and a name filter', async () => {
    const res = await request(t.server)
      .get('/connect/system/clinical')
      .query({ ...creds(client), systemType: 'Payer2Payer', query: 'medi' })
      .expect(200);
    expect(names(res)).toEqual(['Medicaid', 'Medicare']);
    const boston = await request(t.server)
      .get('/connect/system/clinical')
      .query({ ...creds(client), query: 'boston' })
      .expect(200);
    expect(boston.body.length).toBeGreaterThan(0);
    for (const e of boston.body) expect(JSON.stringify(e).toLowerCase()).toContain('boston');
  });

  it('POST with a form body and Accept: application/json → 200, same list', async () => {
    const res = await request(t.server)
      .post('/connect/system/clinical')
      .set('Accept', 'application/json')
      .type('form')
      .send({ ...creds(client), systemType: 'PayerPatientAccess' })
      .expect(200);
    expect(res.headers['content-type']).toMatch(/application\/json/);
    expect(names(res)).toEqual(
      expect.arrayContaining(['Aetna', 'Blue Cross Blue Shield', 'Cigna Health', 'Humana', 'Medicare']),
    );
    expect(res.body.every((e: { system_type: string }) => e.system_type === 'PayerPatientAccess')).toBe(true);
    const hospitals = await request(t.server)
      .post('/connect/system/clinical')
      .type('form')
      .send(creds(client))
      .expect(200);
    expect(hospitals.body).toHaveLength(203);
  });

  it.each([
    ['GET', 'Hospital'],
    ['GET', 'payer2payer'],
    ['POST', 'Unknown'],
  ])('%s with unknown systemType %s → 400 with the allowed values', async (method, systemType) => {
    const res =
      method === 'GET'
        ? await request(t.server).get('/connect/system/clinical').set(creds(client)).query({ systemType })
        : await request(t.server)
            .post('/connect/system/clinical')
            .type('form')
            .send({ ...creds(client), systemType });
    expect(res.status).toBe(400);
    expect(res.body).toEqual({
      error: 'bad_request',
      message: expect.stringMatching(
        /systemType must be one of HealthSystem, Payer2Payer, PayerPatientAccess/,
      ),
    });
  });

  it('a repeated or non-string field → 400 { error, message }; unknown fields are ignored; the form wins over the query', async () => {
    const badRequest = (res: request.Response, message: RegExp) =>
      expect([res.status, res.body]).toEqual([
        400,
        { error: 'bad_request', message: expect.stringMatching(message) },
      ]);
    badRequest(
      await request(t.server).get('/connect/system/clinical').set(creds(client)).query('query=a&query=b'),
      /^query must be a single string$/,
    );
    badRequest(
      await request(t.server)
        .post('/connect/system/clinical')
        .type('form')
        .send(`${new URLSearchParams(creds(client))}&systemType=Payer2Payer&systemType=HealthSystem`),
      /^systemType must be a single string$/,
    );
    badRequest(
      await request(t.server)
        .post('/connect/system/clinical')
        .send({ ...creds(client), query: { $regex: '.*' } }),
      /^query must be a single string$/,
    );
    const payers = await request(t.server)
      .get('/connect/system/clinical')
      .set(creds(client))
      .query({ systemType: 'Payer2Payer', sort: 'name' })
      .expect(200);
    const formWins = await request(t.server)
      .post('/connect/system/clinical')
      .query({ systemType: 'HealthSystem' })
      .type('form')
      .send({ ...creds(client), systemType: 'Payer2Payer', extra: 'ignored' })
      .expect(200);
    expect(formWins.body).toEqual(payers.body);
  });

  it.each([
    ['no credentials', {}],
    ['a wrong secret', { client_id: 'x', client_secret: 'y' }],
    ['only a client_id', { client_id: 'x' }],
  ])('GET with %s → 401', async (_label, headers) => {
    const res = await request(t.server).get('/connect/system/clinical').set(headers).expect(401);
    expect(res.body).toEqual({ error: 'invalid_client', message: expect.any(String) });
  });

  it("one client's id with another client's secret → 401 (headers, query and form alike)", async () => {
    const crossed = { client_id: client.client_id, client_secret: other.client_secret };
    await request(t.server).get('/connect/system/clinical').set(crossed).expect(401);
    await request(t.server).get('/connect/system/clinical').query(crossed).expect(401);
    await request(t.server).post('/connect/system/clinical').type('form').send(crossed).expect(401);
    // authentication comes first: a bad systemType without valid credentials is still 401
    await request(t.server).get('/connect/system/clinical').query({ systemType: 'Nope' }).expect(401);
  });
});
