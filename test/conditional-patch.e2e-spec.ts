import request from 'supertest';
import { bearer, createAppWithUsers, expectOutcome, TestApp, TestUser } from '@app/testing';

/** Conditional PATCH `PATCH /{v}/{type}?criteria` (https://hl7.org/fhir/R4/http.html#patch). */
describe('conditional PATCH (e2e)', () => {
  let t: TestApp;
  let alice: TestUser;
  let bob: TestUser;
  const JSON_PATCH = 'application/json-patch+json';
  const toFemale = [{ op: 'replace', path: '/gender', value: 'female' }];
  const create = async (version: string, value: string, user = alice) =>
    (
      await request(t.server)
        .post(`/${version}/Patient`)
        .set(bearer(user.access_token))
        .set('Content-Type', 'application/fhir+json')
        .send(
          JSON.stringify({
            resourceType: 'Patient',
            gender: 'male',
            identifier: [{ system: 'urn:test:cp', value }],
          }),
        )
        .expect(201)
    ).body.id as string;
  const patch = (path: string, body: unknown, headers: Record<string, string> = {}, user = alice) =>
    request(t.server)
      .patch(path)
      .set(bearer(user.access_token))
      .set({ 'Content-Type': JSON_PATCH, ...headers })
      .send(JSON.stringify(body));
  const read = async (version: string, id: string) =>
    (await request(t.server).get(`/${version}/Patient/${id}`).set(bearer(alice.access_token)).expect(200))
      .body;

  beforeAll(async () => {
    ({
      t,
      users: [alice, bob],
    } = await createAppWithUsers({ users: 2 }));
  });
  afterAll(async () => t?.close());

  it.each(['r4', 'stu3'])(
    '%s: one match → patched (JSON Patch and FHIRPath Patch); If-Match applies to it',
    async (version) => {
      const id = await create(version, `one-${version}`);
      const res = await patch(`/${version}/Patient?identifier=urn:test:cp|one-${version}`, toFemale).expect(
        200,
      );
      expect(res.body.id).toBe(id);
      expect(res.body.gender).toBe('female');
      expect(res.headers.etag).toBe('W/"2"');
      const parameters = {
        resourceType: 'Parameters',
        parameter: [
          {
            name: 'operation',
            part: [
              { name: 'type', valueCode: 'replace' },
              { name: 'path', valueString: 'Patient.gender' },
              { name: 'value', valueCode: 'other' },
            ],
          },
        ],
      };
      const stale = await patch(`/${version}/Patient?identifier=urn:test:cp|one-${version}`, parameters, {
        'Content-Type': 'application/fhir+json',
        'If-Match': 'W/"1"',
      }).expect(412);
      expect(stale.body.resourceType).toBe('OperationOutcome');
      await patch(`/${version}/Patient?identifier=urn:test:cp|one-${version}`, parameters, {
        'Content-Type': 'application/fhir+json',
        'If-Match': 'W/"2"',
      }).expect(200);
      expect((await read(version, id)).gender).toBe('other');
    },
  );

  it("0 matches → 404 and nothing is created; another user's resource is no match", async () => {
    const bobs = await create('r4', 'bobs', bob);
    expectOutcome(await patch('/r4/Patient?identifier=urn:test:cp|bobs', toFemale).expect(404), 'not-found');
    expectOutcome(
      await patch('/r4/Patient?identifier=urn:test:cp|nobody', toFemale).expect(404),
      'not-found',
    );
    const untouched = await request(t.server)
      .get(`/r4/Patient/${bobs}`)
      .set(bearer(bob.access_token))
      .expect(200);
    expect(untouched.body.meta.versionId).toBe('1');
    const created = await request(t.server)
      .get('/r4/Patient?identifier=urn:test:cp|nobody&_summary=count')
      .set(bearer(alice.access_token))
      .expect(200);
    expect(created.body.total).toBe(0);
  });

  it('several matches → 412 and neither is changed', async () => {
    const [a, b] = [await create('r4', 'twice'), await create('r4', 'twice')];
    expectOutcome(
      await patch('/r4/Patient?identifier=urn:test:cp|twice', toFemale).expect(412),
      'multiple-matches',
    );
    expect((await read('r4', a)).gender).toBe('male');
    expect((await read('r4', b)).gender).toBe('male');
  });

  it('unknown parameters → 400 unless lenient; lenient never widens to every resource', async () => {
    const id = await create('r4', 'lenient');
    expectOutcome(
      await patch('/r4/Patient?identifier=urn:test:cp|lenient&nonsense=1', toFemale).expect(400),
      'not-supported',
    );
    const onlyUnknown = await patch('/r4/Patient?nonsense=1', toFemale, {
      Prefer: 'handling=lenient',
    }).expect(400);
    expectOutcome(onlyUnknown, 'invalid');
    expect(onlyUnknown.body.issue[0].diagnostics).toContain('no search criteria');
    expectOutcome(await patch('/r4/Patient', toFemale).expect(400), 'invalid');
    await patch('/r4/Patient?identifier=urn:test:cp|lenient&nonsense=1', toFemale, {
      Prefer: 'handling=lenient',
    }).expect(200);
    expect((await read('r4', id)).gender).toBe('female');
  });

  it('a patch that makes the resource invalid → 422, a bad patch type → 415, DSTU2 → 405, unknown type → 404', async () => {
    const id = await create('r4', 'invalid');
    const res = await patch('/r4/Patient?identifier=urn:test:cp|invalid', [
      { op: 'replace', path: '/gender', value: 'not-a-gender' },
    ]);
    expect(res.status).toBe(422);
    expect(res.body.resourceType).toBe('OperationOutcome');
    expect((await read('r4', id)).gender).toBe('male');
    const wrongType = await patch('/r4/Patient?identifier=urn:test:cp|invalid', toFemale, {
      'Content-Type': 'text/plain',
    }).expect(415);
    expect(wrongType.body.resourceType).toBe('OperationOutcome');
    await create('dstu2', 'dstu2');
    expectOutcome(
      await patch('/dstu2/Patient?identifier=urn:test:cp|dstu2', toFemale).expect(405),
      'not-supported',
    );
    expectOutcome(await patch('/r4/Nonsense?identifier=x', toFemale).expect(404), 'not-found');
  });
});
