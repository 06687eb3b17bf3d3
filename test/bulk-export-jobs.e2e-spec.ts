import request from 'supertest';
import { bearer, createClient, createTestApp, createUser, TestApp, TestUser } from '@app/testing';
import { ExportResourcesRepository } from '../src/modules/bulk-export/export-resources.repository';

type Json = Record<string, any>;

const STALE_MS = 400;
const OBSERVATIONS = 60;
const PER_FILE = 10;

/**
 * Async export jobs whose planning takes longer than the stale time: a job still
 * planning beats and is never taken for abandoned; a job whose run went silent is taken over by the
 * next poll; a run whose job was taken over stops instead of recording its plan. The plan runs
 * for real on the database; it is made slow by holding each planning query back for several stale
 * periods (a spy around the real repository method), as a large store would.
 */
describe('bulk export jobs: heartbeat and take-over (e2e)', () => {
  let t: TestApp;
  let alice: TestUser;
  /** Calls of the planning query (one prefix count for both types per full plan). */
  let planningCalls = 0;

  beforeAll(async () => {
    t = await createTestApp({
      EXPORT_FILE_MAX_RESOURCES: String(PER_FILE),
      EXPORT_JOB_STALE_MS: String(STALE_MS),
    });
    const repository = t.app.get(ExportResourcesRepository);
    const real = repository.prefixCounts.bind(repository);
    jest.spyOn(repository, 'prefixCounts').mockImplementation(async (...args) => {
      planningCalls += 1;
      await new Promise((r) => setTimeout(r, 4 * STALE_MS));
      return real(...args);
    });
    const client = await createClient(t);
    alice = await createUser(t, client);
    await request(t.server)
      .post('/r4/Patient')
      .set(bearer(alice.access_token))
      .set('Content-Type', 'application/fhir+json')
      .send(JSON.stringify({ resourceType: 'Patient', gender: 'other' }))
      .expect(201);
    for (let start = 0; start < OBSERVATIONS; start += 20) {
      const entry = Array.from({ length: 20 }, (_, i) => ({
        resource: {
          resourceType: 'Observation',
          status: 'final',
          code: { text: `reading ${start + i}` },
        },
        request: { method: 'POST', url: 'Observation' },
      }));
      await request(t.server)
        .post('/r4')
        .set(bearer(alice.access_token))
        .set('Content-Type', 'application/fhir+json')
        .send(JSON.stringify({ resourceType: 'Bundle', type: 'transaction', entry }))
        .expect(200);
    }
  }, 120_000);
  afterAll(async () => t?.close());

  /** Every Observation and the Patient, in files of at most PER_FILE (cut at id prefixes: some hold fewer). */
  function expectFiles(files: Array<{ type: string; count: number }>): void {
    const count = (type: string) => files.filter((f) => f.type === type).reduce((n, f) => n + f.count, 0);
    expect(count('Observation')).toBe(OBSERVATIONS);
    expect(count('Patient')).toBe(1);
    expect(Math.max(...files.map((f) => f.count))).toBeLessThanOrEqual(PER_FILE);
    expect(files.length).toBeGreaterThanOrEqual(OBSERVATIONS / PER_FILE + 1);
  }

  const jobs = () => t.connection.db!.collection<Json>('export_jobs');

  async function kickOff(): Promise<string> {
    const res = await request(t.server)
      .get('/r4/$export?_type=Observation,Patient')
      .set(bearer(alice.access_token))
      .set('Accept', 'application/fhir+json')
      .set('Prefer', 'respond-async')
      .expect(202);
    return new URL(res.headers['content-location']).pathname.split('/').pop()!;
  }

  const poll = (jobId: string) =>
    request(t.server).get(`/r4/$export-status/${jobId}`).set(bearer(alice.access_token));

  it('keeps a slow plan alive across polls: one claim, one complete manifest', async () => {
    const jobId = await kickOff();
    const first = await jobs().findOne({ _id: jobId as any });
    let polls = 0;
    let status = 202;
    const deadline = Date.now() + 60_000;
    while (status === 202 && Date.now() < deadline) {
      status = (await poll(jobId)).status;
      polls += 1;
      if (status === 202) await new Promise((r) => setTimeout(r, 100));
    }
    expect(status).toBe(200);
    // The plan outlived the stale time several times over, polled all along, and was never re-claimed.
    expect(polls).toBeGreaterThan(3);
    const done = await jobs().findOne({ _id: jobId as any });
    expect(done!.startedAt).toEqual(first!.startedAt);
    expect(done!.beat.getTime()).toBeGreaterThan(first!.beat.getTime());
    const manifest = (await poll(jobId).expect(200)).body;
    expectFiles(manifest.output);
  }, 90_000);

  it('stops a run whose job was taken over, and lets the new claim finish it', async () => {
    const callsBefore = planningCalls;
    const jobId = await kickOff();
    // Another instance takes the job over (as after a silence): the old run's next beat sees it.
    const takenAt = new Date(Date.now() - 10 * STALE_MS);
    await jobs().updateOne({ _id: jobId as any }, { $set: { startedAt: takenAt, beat: takenAt } });
    await new Promise((r) => setTimeout(r, 6 * STALE_MS));
    const orphan = await jobs().findOne({ _id: jobId as any });
    // The old run stopped: it did not record its plan under the new claim.
    expect(orphan!.state).toBe('in-progress');
    expect(orphan!.startedAt).toEqual(takenAt);
    expect(orphan!.files).toEqual([]);
    // ...and it stopped planning: its one count ran, nothing after it.
    expect(planningCalls - callsBefore).toBe(1);

    // The "other instance" is silent, so the next poll re-claims and plans again.
    let status = 202;
    const deadline = Date.now() + 60_000;
    while (status === 202 && Date.now() < deadline) {
      status = (await poll(jobId)).status;
      if (status === 202) await new Promise((r) => setTimeout(r, 100));
    }
    expect(status).toBe(200);
    const done = await jobs().findOne({ _id: jobId as any });
    expect(done!.startedAt.getTime()).toBeGreaterThan(takenAt.getTime());
    expectFiles(done!.files);
  }, 90_000);
});
