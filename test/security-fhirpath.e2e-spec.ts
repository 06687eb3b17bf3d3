import request from 'supertest';
import {
  bearer,
  catastrophicFhirPath,
  createClient,
  createFemalePatient,
  createTestApp,
  createUser,
  IDENTITY_TEST_ENV,
  replaceGenderPatch,
  TestApp,
  TestUser,
} from '@app/testing';

const catastrophic = catastrophicFhirPath;

/**
 * A caller's FHIRPath runs off the request-serving event loop with a time bound
 * (FHIRPATH_TIMEOUT_MS, docs/security.md): a catastrophic expression answers 422 naming the limit,
 * nothing is stored, and another tenant's reads are answered while it runs.
 */
describe('security: bounded FHIRPath evaluation (e2e)', () => {
  let t: TestApp;
  let alice: TestUser;
  let other: TestUser;
  let otherPatient: string;
  const json = 'application/fhir+json';
  const replaceGender = replaceGenderPatch;
  const create = (user: TestUser) => createFemalePatient(t, user);
  const patch = (id: string, body: unknown) =>
    request(t.server)
      .patch(`/r4/Patient/${id}`)
      .set(bearer(alice.access_token))
      .set('Content-Type', json)
      .send(JSON.stringify(body));
  const read = (id: string) => request(t.server).get(`/r4/Patient/${id}`).set(bearer(other.access_token));

  beforeAll(async () => {
    t = await createTestApp(IDENTITY_TEST_ENV);
    alice = await createUser(t, await createClient(t));
    other = await createUser(t, await createClient(t));
    otherPatient = await create(other);
  });
  afterAll(async () => t?.close());

  it.each([29, 35])(
    'the probe payload with %i × a → 422 naming FHIRPATH_TIMEOUT_MS; another tenant reads meanwhile',
    async (as) => {
      const id = await create(alice);
      let patchAnswered = false;
      const answer = patch(id, replaceGender(catastrophic(as))).then((res) => {
        patchAnswered = true;
        return res;
      });
      // the other tenant's reads, one after another, while the patch is in flight
      let readsBeforePatch = 0;
      while (!patchAnswered) {
        const res = await read(otherPatient);
        expect(res.status).toBe(200);
        if (!patchAnswered) readsBeforePatch++;
        if (readsBeforePatch >= 3) break;
      }
      const res = await answer;
      expect(res.status).toBe(422);
      expect(res.body.resourceType).toBe('OperationOutcome');
      expect(res.body.issue[0].code).toBe('too-costly');
      expect(res.body.issue[0].diagnostics).toContain('FHIRPATH_TIMEOUT_MS');
      expect(readsBeforePatch).toBeGreaterThan(0);
      const stored = await request(t.server).get(`/r4/Patient/${id}`).set(bearer(alice.access_token));
      expect(stored.body.meta.versionId).toBe('1');
      expect(stored.body.gender).toBe('female');
    },
  );

  it('after a terminated evaluation the next patches are served; invalid FHIRPath is still 400', async () => {
    const id = await create(alice);
    const slow = await patch(id, replaceGender(catastrophic(33)));
    expect(slow.status).toBe(422);
    const ok = await patch(await create(alice), replaceGender('Patient.gender'));
    expect(ok.status).toBe(200);
    expect(ok.body.gender).toBe('male');
    const again = await patch(id, replaceGender("Patient.where(gender = 'female').gender"));
    expect(again.status).toBe(200);
    expect(again.body.gender).toBe('male');
    const invalid = await patch(id, replaceGender('Patient.(('));
    expect(invalid.status).toBe(400);
    expect(invalid.body.issue[0].diagnostics).toContain('not valid FHIRPath');
  });
});
