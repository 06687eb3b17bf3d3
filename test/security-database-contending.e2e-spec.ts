import { performance } from 'node:perf_hooks';
import request from 'supertest';
import {
  bearer,
  createAppWithUsers,
  IDENTITY_TEST_ENV,
  seedWordObservations,
  TestApp,
  TestUser,
} from '@app/testing';

const json = 'application/fhir+json';
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Work (database time here) is charged, and a client's share split among its users, only among
 * callers that contend: a request in flight, or one that started or ended within a moment
 * (ClientConcurrency's CONTENDING_MS, docs/security.md "The cost budget"). At 500 ms of database
 * time per second, a two-user app's legitimate burst right after its other user's request (and
 * another client's) is served: nobody waits for it. Before, anyone active within the last second
 * counted, so the burst was charged at half the client's share and refused 429. A client flooding
 * slow searches while another client reads is still refused, and the reader is never refused.
 */
describe('security: work charged among contending callers only (e2e)', () => {
  let t: TestApp;
  let alice: TestUser;
  let bob: TestUser;
  let mallory: TestUser;
  beforeAll(async () => {
    // the in-flight cap is not under test: only the database share refuses here
    ({
      t,
      users: [alice, bob],
      strangers: [mallory],
    } = await createAppWithUsers(
      { users: 2, strangers: 1 },
      { ...IDENTITY_TEST_ENV, CLIENT_DATABASE_MS_PER_SECOND: '500', CLIENT_MAX_CONCURRENT_REQUESTS: '100' },
    ));
    for (const [user, id] of [
      [alice, 'alice'],
      [bob, 'bob'],
      [mallory, 'mallory'],
    ] as const) {
      await request(t.server)
        .put(`/r4/Patient/${id}`)
        .set(bearer(user.access_token))
        .set('Content-Type', json)
        .send(JSON.stringify({ resourceType: 'Patient', id }))
        .expect(201);
    }
    // what the other client's slow searches scan: 300 Observations of words
    await seedWordObservations(t, mallory.access_token);
  });
  afterAll(async () => t?.close());

  const put = (id: string, birthDate: string) =>
    request(t.server)
      .put(`/r4/Patient/${id}`)
      .set(bearer(alice.access_token))
      .set('Content-Type', json)
      .send(JSON.stringify({ resourceType: 'Patient', id, birthDate }));

  it("a two-user app's burst of 50 concurrent updates right after its other user's and another client's reads is served", async () => {
    // the app's other user and another client were active a moment ago, and are done
    await request(t.server).get('/r4/Patient/bob').set(bearer(bob.access_token)).expect(200);
    await request(t.server).get('/r4/Patient/mallory').set(bearer(mallory.access_token)).expect(200);
    await sleep(150);
    const burst = await Promise.all(
      Array.from({ length: 50 }, (_, i) => put('alice', `19${String(i).padStart(2, '0')}-01-01`)),
    );
    expect(burst.filter((res) => res.status !== 200).map((res) => [res.status, res.text])).toStrictEqual([]);
    // and its next requests too: the burst left no debt behind
    await request(t.server).get('/r4/Patient/alice').set(bearer(alice.access_token)).expect(200);
    await request(t.server).get('/r4/Patient/bob').set(bearer(bob.access_token)).expect(200);
  });

  it('a client looping slow searches while the app reads is refused 429 naming CLIENT_DATABASE_MS_PER_SECOND; the app never is', async () => {
    // prefixes that match nothing: each search scans the full-text index and answers nothing
    const slow = `/r4/Observation?_content=${Array.from({ length: 100 }, (_, i) => `zz${i}`).join(',')}`;
    const until = performance.now() + 5_000;
    const flood: request.Response[] = [];
    const loop = async () => {
      while (performance.now() < until) {
        const res = await request(t.server).get(slow).set(bearer(mallory.access_token));
        flood.push(res);
        if (res.status === 429) await sleep(100);
      }
    };
    const reads: request.Response[] = [];
    // the two-user app's reads, back to back: it contends throughout
    const reader = async (user: TestUser, id: string) => {
      while (performance.now() < until)
        reads.push(await request(t.server).get(`/r4/Patient/${id}`).set(bearer(user.access_token)));
    };
    await Promise.all([reader(alice, 'alice'), reader(bob, 'bob'), ...Array.from({ length: 4 }, loop)]);
    expect(
      flood.filter((res) => res.status !== 200 && res.status !== 429).map((res) => res.text),
    ).toStrictEqual([]);
    const refused = flood.filter((res) => res.status === 429);
    expect(refused.length).toBeGreaterThan(0);
    expect(refused[0].body.issue[0].diagnostics).toMatch(/CLIENT_DATABASE_MS_PER_SECOND/);
    expect(Number(refused[0].headers['retry-after'])).toBeGreaterThanOrEqual(1);
    expect(reads.length).toBeGreaterThan(0);
    expect(reads.filter((res) => res.status !== 200).map((res) => [res.status, res.text])).toStrictEqual([]);
  });
});
