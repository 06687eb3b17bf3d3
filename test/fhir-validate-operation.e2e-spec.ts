import request from 'supertest';
import { createTestApp, TestApp } from '@app/testing';
import { bearer, clientToken, createClient, createUser, TestUser } from '@app/testing/factories';

describe('$validate operation (e2e)', () => {
  let t: TestApp;
  let user: TestUser;
  beforeAll(async () => {
    t = await createTestApp({ USER_MGMT_RATE_LIMIT: '100000' });
    const client = await createClient(t);
    user = await createUser(t, client);
  });
  afterAll(async () => t?.close());

  const validate = (path: string, body: unknown, token = user.access_token) =>
    request(t.server)
      .post(path)
      .set(bearer(token))
      .set('Content-Type', 'application/fhir+json')
      .send(JSON.stringify(body));

  it('answers 200 with an information issue for a valid resource, and stores nothing', async () => {
    const res = await validate('/r4/Patient/$validate', { resourceType: 'Patient', gender: 'female' }).expect(
      200,
    );
    expect(res.headers['content-type']).toMatch(/application\/fhir\+json/);
    expect(res.body.resourceType).toBe('OperationOutcome');
    expect(res.body.issue).toEqual([expect.objectContaining({ severity: 'information' })]);
    expect(await t.connection.collection('resources').countDocuments({})).toBe(0);
  });

  it('DSTU2: a code outside a required binding is refused on create (400) and reported by $validate', async () => {
    const nope = { resourceType: 'Patient', gender: 'nope' };
    const created = await request(t.server)
      .post('/dstu2/Patient')
      .set(bearer(user.access_token))
      .set('Content-Type', 'application/json+fhir')
      .send(JSON.stringify(nope))
      .expect(400);
    expect(created.body.resourceType).toBe('OperationOutcome');
    expect(JSON.stringify(created.body.issue)).toContain('administrative-gender');
    const validated = await validate('/dstu2/Patient/$validate', nope).expect(200);
    expect(validated.body.issue).toEqual([
      expect.objectContaining({ severity: 'error', diagnostics: expect.stringContaining("'nope'") }),
    ]);
    const fine = await validate('/dstu2/Patient/$validate', { ...nope, gender: 'other' }).expect(200);
    expect(fine.body.issue).toEqual([expect.objectContaining({ severity: 'information' })]);
    expect(await t.connection.collection('resources').countDocuments({ v: 'dstu2', t: 'Patient' })).toBe(0);
  });

  it('lists every problem with its path', async () => {
    const res = await validate('/r4/Observation/$validate', {
      resourceType: 'Observation',
      code: { text: 'x' },
      valueString: 'a',
      valueBoolean: true,
      bogus: 1,
    }).expect(200);
    const paths = res.body.issue.map((i: any) => i.expression?.[0]);
    expect(paths).toEqual(expect.arrayContaining(['Observation.status', 'Observation.bogus']));
    expect(res.body.issue.every((i: any) => i.severity === 'error')).toBe(true);
  });

  it('takes a Parameters body with mode and profile', async () => {
    const res = await validate('/stu3/Patient/p1/$validate', {
      resourceType: 'Parameters',
      parameter: [
        { name: 'resource', resource: { resourceType: 'Patient', id: 'other' } },
        { name: 'mode', valueCode: 'update' },
        { name: 'profile', valueUri: 'http://example.org/p' },
      ],
    }).expect(200);
    expect(res.body.issue.map((i: any) => i.code)).toEqual(
      expect.arrayContaining(['invalid', 'not-supported']),
    );
  });

  it('rejects a resource type that differs from the URL', async () => {
    const res = await validate('/r4/Patient/$validate', { resourceType: 'Observation' }).expect(200);
    expect(res.body.issue[0].code).toBe('invalid');
  });

  it('refuses unknown types, unknown modes and missing credentials', async () => {
    await validate('/r4/Nope/$validate', { resourceType: 'Nope' }).expect(404);
    await validate('/r4/Patient/$validate', {
      resourceType: 'Parameters',
      parameter: [{ name: 'mode', valueCode: 'x' }],
    }).expect(400);
    await validate('/r4/Patient/$validate', {}).expect(400);
    await request(t.server).post('/r4/Patient/$validate').send({ resourceType: 'Patient' }).expect(401);
  });

  it('may be used with a read-only client token', async () => {
    const client = await createClient(t, { programs: ['provider-access'] });
    const token = await clientToken(t, client, { realm: 'dev-portal', scope: 'user/*.rs' });
    await validate('/r4/Patient/$validate', { resourceType: 'Patient' }, token).expect(200);
  });
});
