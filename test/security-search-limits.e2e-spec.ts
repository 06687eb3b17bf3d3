import request from 'supertest';
import {
  bearer,
  createClient,
  createTestApp,
  createUser,
  IDENTITY_TEST_ENV,
  TestApp,
  TestUser,
} from '@app/testing';

/**
 * Searches that would silently widen or reach the database with an oversized pattern are refused
 * with an OperationOutcome naming the problem, and a subsetted read is never taken for the version
 * it was cut from (docs/api.md, docs/security.md).
 */
describe('security: search values, $everything periods and subsetted reads (e2e)', () => {
  let t: TestApp;
  let user: TestUser;
  let patientId: string;
  const get = (path: string) => request(t.server).get(path).set(bearer(user.access_token));
  const diagnostics = (res: request.Response) =>
    (res.body.issue as Array<{ diagnostics?: string }>).map((i) => i.diagnostics).join(' ');

  beforeAll(async () => {
    t = await createTestApp(IDENTITY_TEST_ENV);
    user = await createUser(t, await createClient(t));
    const created = await request(t.server)
      .post('/r4/Patient')
      .set(bearer(user.access_token))
      .set('Content-Type', 'application/fhir+json')
      .send(
        JSON.stringify({
          resourceType: 'Patient',
          gender: 'female',
          name: [{ family: 'Pool', given: ['Ada'] }],
        }),
      )
      .expect(201);
    patientId = created.body.id as string;
  });
  afterAll(async () => t?.close());

  it.each([
    ['a value of one letter', '_content=a'],
    ['one alternative without a word', '_content=pool,a'],
    ['only punctuation', '_content=%21%3F'],
  ])('_content with %s → 400, not every resource', async (_name, query) => {
    const res = await get(`/r4/Patient?${query}`).expect(400);
    expect(res.body.resourceType).toBe('OperationOutcome');
    expect(diagnostics(res)).toContain('no searchable word');
  });

  it('_content with a word still finds the resource', async () => {
    const res = await get('/r4/Patient?_content=pool,a1').expect(200);
    expect(res.body.entry.map((e: any) => e.resource.id)).toEqual([patientId]);
  });

  it('a search value over 1024 characters → 400 naming the limit; 1024 is searched', async () => {
    const long = await get(`/r4/Patient?name=${'p'.repeat(1025)}`).expect(400);
    expect(diagnostics(long)).toContain('at most 1024');
    const inList = await get(`/r4/Patient?name=pool,${'p'.repeat(5000)}`).expect(400);
    expect(diagnostics(inList)).toContain('5000 characters long');
    const atLimit = await get(`/r4/Patient?name=${'p'.repeat(1024)}`).expect(200);
    expect(atLimit.body.entry ?? []).toEqual([]);
  });

  it('$everything with start after end → 400; an ordered period → 200', async () => {
    const res = await get(`/r4/Patient/${patientId}/$everything?start=2024-02-01&end=2024-01-01`).expect(400);
    expect(res.body.resourceType).toBe('OperationOutcome');
    expect(diagnostics(res)).toContain('is after end');
    await get(`/r4/Patient/${patientId}/$everything?start=2024-01-01&end=2024-01-01`).expect(200);
  });

  it.each(['_elements=name', '_summary=true'])(
    'a read with %s carries a weak ETag of its own, which If-Match refuses',
    async (query) => {
      const whole = await get(`/r4/Patient/${patientId}`).expect(200);
      expect(whole.headers.etag).toBe('W/"1"');
      const subset = await get(`/r4/Patient/${patientId}?${query}`).expect(200);
      expect(subset.body.meta.tag).toEqual(
        expect.arrayContaining([expect.objectContaining({ code: 'SUBSETTED' })]),
      );
      expect(subset.headers.etag).toMatch(/^W\/"1-[A-Za-z0-9_-]+"$/);
      const again = await get(`/r4/Patient/${patientId}?${query}`).expect(200);
      expect(again.headers.etag).toBe(subset.headers.etag);
      await request(t.server)
        .put(`/r4/Patient/${patientId}`)
        .set(bearer(user.access_token))
        .set('Content-Type', 'application/fhir+json')
        .set('If-Match', subset.headers.etag)
        .send(JSON.stringify({ resourceType: 'Patient', id: patientId }))
        .expect(412);
    },
  );

  it('the other subset gets another ETag; _summary=false is the whole version', async () => {
    const elements = await get(`/r4/Patient/${patientId}?_elements=name`).expect(200);
    const summary = await get(`/r4/Patient/${patientId}?_summary=true`).expect(200);
    expect(elements.headers.etag).not.toBe(summary.headers.etag);
    const whole = await get(`/r4/Patient/${patientId}?_summary=false`).expect(200);
    expect(whole.headers.etag).toBe('W/"1"');
  });
});
