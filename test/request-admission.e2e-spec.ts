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
 * Issue 13, request admission (src/admission/request-admission.ts): a database that is busy, not
 * hung, never turns a waiting request into a 503. One write and one read run at a time here, so
 * a flood of one client's bundles waits; the flooding client, over its share, gets 429 with
 * Retry-After, the others get served, and nothing is half-stored. (The hung database answering
 * 503 to waiting requests too: test/database-hang.e2e-spec.ts.)
 */
describe('request admission under overload (e2e)', () => {
  const FLOOD = 12;
  let t: TestApp;
  let heavy: TestUser;
  let light: TestUser;
  beforeAll(async () => {
    t = await createTestApp({
      ...IDENTITY_TEST_ENV,
      DIRECTORY_SEED: 'false',
      SERVER_MAX_CONCURRENT_READS: '1',
      SERVER_MAX_CONCURRENT_WRITES: '1',
      SERVER_QUEUE_WAIT_MS: '50',
      // the per-client limit is not under test
      CLIENT_MAX_CONCURRENT_REQUESTS: '100',
    });
    heavy = await createUser(t, await createClient(t));
    light = await createUser(t, await createClient(t));
  });
  afterAll(async () => t?.close());

  const post = (path: string, body: unknown, who: TestUser) =>
    request(t.server)
      .post(path)
      .set(bearer(who.access_token))
      .set('Content-Type', 'application/fhir+json')
      .send(JSON.stringify(body));

  /** A transaction of one Patient and 19 Observations about it (the load benchmark's bundle). */
  const bundle = (marker: string) => ({
    resourceType: 'Bundle',
    type: 'transaction',
    entry: Array.from({ length: 20 }, (_, i) => ({
      fullUrl: `urn:uuid:00000000-0000-4000-8000-${String(i).padStart(12, '0')}`,
      resource:
        i === 0
          ? { resourceType: 'Patient', gender: 'female', name: [{ family: marker }] }
          : {
              resourceType: 'Observation',
              status: 'final',
              code: { coding: [{ system: 'http://loinc.org', code: '8867-4' }] },
              subject: { reference: 'urn:uuid:00000000-0000-4000-8000-000000000000' },
              valueQuantity: { value: 60 + i, unit: '/min' },
            },
      request: { method: 'POST', url: i === 0 ? 'Patient' : 'Observation' },
    })),
  });

  it(`${FLOOD} bundles of one client at once: 200 or 429 with Retry-After, never 503; another client's write and read are served; nothing half-stored`, async () => {
    const seeded = await post('/r4/Patient', { resourceType: 'Patient', gender: 'male' }, light).expect(201);
    const flood = Array.from({ length: FLOOD }, () => post('/r4', bundle('Flood'), heavy));
    // the light client comes while the flood waits
    await new Promise((resolve) => setTimeout(resolve, 20));
    const lightWrite = post('/r4/Patient', { resourceType: 'Patient', gender: 'other' }, light);
    const lightRead = request(t.server).get(`/r4/Patient/${seeded.body.id}`).set(bearer(light.access_token));
    const [floodAnswers, write, read] = await Promise.all([Promise.all(flood), lightWrite, lightRead]);

    expect([write.status, read.status]).toEqual([201, 200]);
    const statuses = floodAnswers.map((r) => r.status);
    expect(statuses.filter((s) => s !== 200 && s !== 429)).toEqual([]);
    const served = statuses.filter((s) => s === 200).length;
    expect(served).toBeGreaterThanOrEqual(1);
    expect(served).toBeLessThan(FLOOD);
    for (const refused of floodAnswers.filter((r) => r.status === 429)) {
      expect(refused.headers['retry-after']).toBe('1');
      expect(refused.body).toMatchObject({
        resourceType: 'OperationOutcome',
        issue: [
          { code: 'throttled', diagnostics: expect.stringMatching(/share of concurrent write requests/) },
        ],
      });
    }
    // every bundle answered 200 is stored whole, every refused one not at all
    const observations = await request(t.server)
      .get('/r4/Observation?_summary=count')
      .set(bearer(heavy.access_token))
      .expect(200);
    const patients = await request(t.server)
      .get('/r4/Patient?family=Flood&_summary=count')
      .set(bearer(heavy.access_token))
      .expect(200);
    expect([observations.body.total, patients.body.total]).toEqual([served * 19, served]);
  }, 60_000);

  it('reads wait apart from writes: a read of the flooding client is served while its writes queue', async () => {
    const own = await post('/r4/Patient', { resourceType: 'Patient' }, heavy).expect(201);
    const flood = Array.from({ length: 6 }, () => post('/r4', bundle('Again'), heavy));
    await new Promise((resolve) => setTimeout(resolve, 20));
    const read = await request(t.server).get(`/r4/Patient/${own.body.id}`).set(bearer(heavy.access_token));
    expect(read.status).toBe(200);
    const statuses = (await Promise.all(flood)).map((r) => r.status);
    expect(statuses.filter((s) => s !== 200 && s !== 429)).toEqual([]);
  }, 60_000);
});
