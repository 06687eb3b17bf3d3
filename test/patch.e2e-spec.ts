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

/** PATCH: JSON Patch and FHIRPath Patch (https://hl7.org/fhir/R4/http.html#patch). */
describe('PATCH (e2e)', () => {
  let t: TestApp;
  let alice: TestUser;
  const create = async (version: string, body: Record<string, unknown>) =>
    (
      await request(t.server)
        .post(`/${version}/Patient`)
        .set(bearer(alice.access_token))
        .set('Content-Type', 'application/fhir+json')
        .send(JSON.stringify(body))
        .expect(201)
    ).body as { id: string };
  const patch = (path: string, body: unknown, contentType: string, headers: Record<string, string> = {}) =>
    request(t.server)
      .patch(path)
      .set(bearer(alice.access_token))
      .set({ 'Content-Type': contentType, ...headers })
      .send(JSON.stringify(body));
  const op = (parts: Array<Record<string, unknown>>) => ({ name: 'operation', part: parts });

  beforeAll(async () => {
    t = await createTestApp(IDENTITY_TEST_ENV);
    const client = await createClient(t);
    alice = await createUser(t, client);
  });
  afterAll(async () => t?.close());

  it('JSON Patch on R4 and STU3: a new version; If-Match checked', async () => {
    for (const version of ['r4', 'stu3']) {
      const { id } = await create(version, {
        resourceType: 'Patient',
        gender: 'male',
        name: [{ family: 'A' }],
      });
      const res = await patch(
        `/${version}/Patient/${id}`,
        [
          { op: 'replace', path: '/gender', value: 'female' },
          { op: 'add', path: '/birthDate', value: '1970-01-01' },
          { op: 'add', path: '/name/0/given', value: ['Eve'] },
        ],
        'application/json-patch+json',
        { 'If-Match': 'W/"1"' },
      ).expect(200);
      expect(res.body).toMatchObject({
        gender: 'female',
        birthDate: '1970-01-01',
        name: [{ family: 'A', given: ['Eve'] }],
      });
      expect(res.body.meta.versionId).toBe('2');
      expect(res.headers.etag).toBe('W/"2"');
      await patch(
        `/${version}/Patient/${id}`,
        [{ op: 'remove', path: '/birthDate' }],
        'application/json-patch+json',
        {
          'If-Match': 'W/"1"',
        },
      ).expect(412);
    }
  });

  it('FHIRPath Patch: add, insert, replace, delete, move', async () => {
    const { id } = await create('r4', {
      resourceType: 'Patient',
      gender: 'male',
      identifier: [
        { system: 'urn:a', value: '1' },
        { system: 'urn:b', value: '2' },
      ],
    });
    const parameters = {
      resourceType: 'Parameters',
      parameter: [
        op([
          { name: 'type', valueCode: 'add' },
          { name: 'path', valueString: 'Patient' },
          { name: 'name', valueString: 'birthDate' },
          { name: 'value', valueDate: '1930-01-01' },
        ]),
        op([
          { name: 'type', valueCode: 'add' },
          { name: 'path', valueString: 'Patient' },
          { name: 'name', valueString: 'name' },
          { name: 'value', valueHumanName: { family: 'Chalmers' } },
        ]),
        op([
          { name: 'type', valueCode: 'replace' },
          { name: 'path', valueString: 'Patient.gender' },
          { name: 'value', valueCode: 'female' },
        ]),
        op([
          { name: 'type', valueCode: 'insert' },
          { name: 'path', valueString: 'Patient.identifier' },
          { name: 'index', valueInteger: 0 },
          { name: 'value', valueIdentifier: { system: 'urn:c', value: '3' } },
        ]),
        op([
          { name: 'type', valueCode: 'delete' },
          { name: 'path', valueString: "Patient.identifier.where(system='urn:a')" },
        ]),
        op([
          { name: 'type', valueCode: 'move' },
          { name: 'path', valueString: 'Patient.identifier' },
          { name: 'source', valueInteger: 1 },
          { name: 'destination', valueInteger: 0 },
        ]),
      ],
    };
    const res = await patch(`/r4/Patient/${id}`, parameters, 'application/fhir+json').expect(200);
    expect(res.body.birthDate).toBe('1930-01-01');
    expect(res.body.name).toEqual([{ family: 'Chalmers' }]);
    expect(res.body.gender).toBe('female');
    expect(res.body.identifier.map((i: any) => i.system)).toEqual(['urn:b', 'urn:c']);
  });

  it('a patch that breaks the resource → 422 with the validation outcome, nothing stored', async () => {
    const { id } = await create('r4', { resourceType: 'Patient', gender: 'male' });
    const res = await patch(
      `/r4/Patient/${id}`,
      [{ op: 'add', path: '/birthDate', value: 'not a date' }],
      'application/json-patch+json',
    ).expect(422);
    expect(res.body.resourceType).toBe('OperationOutcome');
    expect(JSON.stringify(res.body.issue)).toContain('birthDate');
    const read = await request(t.server).get(`/r4/Patient/${id}`).set(bearer(alice.access_token)).expect(200);
    expect(read.body.meta.versionId).toBe('1');
    expect(read.body.birthDate).toBeUndefined();
    // a failed test op → 422; a malformed document → 400; changing the id → 422
    await patch(
      `/r4/Patient/${id}`,
      [{ op: 'test', path: '/gender', value: 'female' }],
      'application/json-patch+json',
    ).expect(422);
    await patch(`/r4/Patient/${id}`, { op: 'x' }, 'application/json-patch+json').expect(400);
    await patch(
      `/r4/Patient/${id}`,
      [{ op: 'replace', path: '/id', value: 'other' }],
      'application/json-patch+json',
    ).expect(422);
    await patch(`/r4/Patient/${id}`, [], 'text/plain').expect(415);
    await patch('/r4/Patient/unknown-id', [], 'application/json-patch+json').expect(404);
    await patch(`/dstu2/Patient/${id}`, [], 'application/json-patch+json').expect(405);
  });

  it('PATCH as a transaction entry (Binary JSON Patch and Parameters)', async () => {
    // Two resources: a transaction may not target one resource twice (FHIR R4 §3.1.0.11.2).
    const { id } = await create('r4', { resourceType: 'Patient', gender: 'male' });
    const { id: other } = await create('r4', { resourceType: 'Patient', gender: 'male' });
    const jsonPatch = Buffer.from(
      JSON.stringify([{ op: 'add', path: '/birthDate', value: '1980-02-02' }]),
    ).toString('base64');
    const bundle = {
      resourceType: 'Bundle',
      type: 'transaction',
      entry: [
        {
          resource: { resourceType: 'Binary', contentType: 'application/json-patch+json', data: jsonPatch },
          request: { method: 'PATCH', url: `Patient/${id}` },
        },
        {
          resource: {
            resourceType: 'Parameters',
            parameter: [
              op([
                { name: 'type', valueCode: 'replace' },
                { name: 'path', valueString: 'Patient.gender' },
                { name: 'value', valueCode: 'other' },
              ]),
            ],
          },
          request: { method: 'PATCH', url: `Patient/${other}` },
        },
      ],
    };
    const res = await request(t.server)
      .post('/r4')
      .set(bearer(alice.access_token))
      .set('Content-Type', 'application/fhir+json')
      .send(JSON.stringify(bundle))
      .expect(200);
    expect(res.body.entry.map((e: any) => e.response.status)).toEqual(['200 OK', '200 OK']);
    const read = await request(t.server).get(`/r4/Patient/${id}`).set(bearer(alice.access_token)).expect(200);
    expect(read.body).toMatchObject({ birthDate: '1980-02-02', gender: 'male' });
    expect(read.body.meta.versionId).toBe('2');
    const patched = await request(t.server)
      .get(`/r4/Patient/${other}`)
      .set(bearer(alice.access_token))
      .expect(200);
    expect(patched.body).toMatchObject({ gender: 'other' });
    expect(patched.body.meta.versionId).toBe('2');
  });

  it('refuses a transaction that patches one resource twice, storing nothing', async () => {
    const { id } = await create('r4', { resourceType: 'Patient', gender: 'male' });
    const entry = (gender: string) => ({
      resource: {
        resourceType: 'Parameters',
        parameter: [
          op([
            { name: 'type', valueCode: 'replace' },
            { name: 'path', valueString: 'Patient.gender' },
            { name: 'value', valueCode: gender },
          ]),
        ],
      },
      request: { method: 'PATCH', url: `Patient/${id}` },
    });
    await request(t.server)
      .post('/r4')
      .set(bearer(alice.access_token))
      .set('Content-Type', 'application/fhir+json')
      .send(
        JSON.stringify({
          resourceType: 'Bundle',
          type: 'transaction',
          entry: [entry('other'), entry('female')],
        }),
      )
      .expect(400);
    const read = await request(t.server).get(`/r4/Patient/${id}`).set(bearer(alice.access_token)).expect(200);
    expect(read.body.meta.versionId).toBe('1');
  });
});
