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
 * Issue 16 item 3, the limits that keep one tenant from slowing the others: a maximum resource
 * size, a maximum array length per element, and a per-client limit of FHIR requests in flight.
 * (The cross-tenant p99 figure is a benchmark: bench/fairness.ts.)
 */
describe('security: tenant fairness limits (e2e)', () => {
  let t: TestApp;
  let alice: TestUser;
  let bob: TestUser;
  beforeAll(async () => {
    t = await createTestApp({
      ...IDENTITY_TEST_ENV,
      MAX_RESOURCE_BYTES: '64kb',
      MAX_ARRAY_LENGTH: '50',
      CLIENT_MAX_CONCURRENT_REQUESTS: '2',
    });
    alice = await createUser(t, await createClient(t));
    bob = await createUser(t, await createClient(t));
  });
  afterAll(async () => t?.close());

  const stored = () => t.connection.collection('resource_history').countDocuments({});
  const post = (path: string, body: unknown, who = alice) =>
    request(t.server)
      .post(path)
      .set(bearer(who.access_token))
      .set('Content-Type', 'application/fhir+json')
      .send(JSON.stringify(body));

  it('a resource over MAX_RESOURCE_BYTES → 413, alone or as a bundle entry; nothing stored', async () => {
    const before = await stored();
    const big = {
      resourceType: 'Patient',
      text: { status: 'generated', div: `<div>${'x'.repeat(70_000)}</div>` },
    };
    const alone = await post('/r4/Patient', big).expect(413);
    expect(alone.body.issue[0]).toMatchObject({
      code: 'too-long',
      diagnostics: expect.stringMatching(/MAX_RESOURCE_BYTES/),
    });
    const inBundle = await post('/r4', {
      resourceType: 'Bundle',
      type: 'transaction',
      entry: [
        { resource: { resourceType: 'Patient' }, request: { method: 'POST', url: 'Patient' } },
        { resource: big, request: { method: 'POST', url: 'Patient' } },
      ],
    }).expect(413);
    expect(inBundle.body.issue[0].diagnostics).toMatch(/^Bundle\.entry\[1\]\.resource is \d+ bytes/);
    expect(await stored()).toBe(before);
  });

  it('an element repeated more than MAX_ARRAY_LENGTH times → 400 naming it; at the limit it is stored', async () => {
    const names = (n: number) => Array.from({ length: n }, (_, i) => ({ family: `F${i}` }));
    const res = await post('/r4/Patient', { resourceType: 'Patient', name: names(51) }).expect(400);
    expect(res.body.issue[0].diagnostics).toMatch(/^Patient\.name repeats 51 times; at most 50/);
    await post('/r4/Patient', { resourceType: 'Patient', name: names(50) }).expect(201);
  });

  it('a client alone on an idle server is not refused for concurrency: 30 requests at once over a cap of 2 → all 200', async () => {
    const lone = await createUser(t, await createClient(t));
    // the other clients of this file have been idle for a moment
    await new Promise((resolve) => setTimeout(resolve, 1_200));
    const burst = await Promise.all(
      Array.from({ length: 30 }, () =>
        request(t.server).get('/r4/Patient?gender=other').set(bearer(lone.access_token)),
      ),
    );
    expect(burst.map((r) => r.status)).toEqual(Array.from({ length: 30 }, () => 200));
  });

  it('more than CLIENT_MAX_CONCURRENT_REQUESTS FHIR requests of one client in flight while another client is active → 429 with Retry-After; the other client is served', async () => {
    for (let i = 0; i < 5; i++) await post('/r4/Patient', { resourceType: 'Patient', gender: 'other' });
    const search = (who: TestUser) =>
      request(t.server).get('/r4/Patient?gender=other').set(bearer(who.access_token));
    await search(bob).expect(200); // bob is active
    const [burst, other] = await Promise.all([
      Promise.all(Array.from({ length: 30 }, () => search(alice))),
      Promise.all(Array.from({ length: 2 }, () => search(bob))),
    ]);
    const statuses = burst.map((r) => r.status);
    expect(statuses.filter((s) => s !== 200 && s !== 429)).toEqual([]);
    expect(statuses.filter((s) => s === 429).length).toBeGreaterThan(0);
    expect(statuses.filter((s) => s === 200).length).toBeGreaterThanOrEqual(2);
    const throttled = burst.find((r) => r.status === 429)!;
    expect(throttled.headers['retry-after']).toBe('1');
    expect(throttled.body.issue[0].code).toBe('throttled');
    expect(other.map((r) => r.status)).toEqual([200, 200]);
    // slots are given back: once the burst is over the client is served again
    await search(alice).expect(200);
  });
});
