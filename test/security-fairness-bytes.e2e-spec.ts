import request from 'supertest';
import {
  bearer,
  createClient,
  createTestApp,
  createUser,
  followPages,
  IDENTITY_TEST_ENV,
  TestApp,
  TestUser,
} from '@app/testing';

const PAGE_BYTES = 20 * 1024;

/** A Patient whose stored JSON is about `bytes` long (narrative text), findable by `family`. */
function patientOf(family: string, bytes: number): Record<string, unknown> {
  return {
    resourceType: 'Patient',
    name: [{ family }],
    text: {
      status: 'generated',
      div: `<div xmlns="http://www.w3.org/1999/xhtml">${'x'.repeat(bytes)}</div>`,
    },
  };
}

function post(t: TestApp, who: TestUser, body: unknown) {
  return request(t.server)
    .post('/r4/Patient')
    .set(bearer(who.access_token))
    .set('Content-Type', 'application/fhir+json')
    .send(JSON.stringify(body));
}

/**
 * Issue 16 item 3, the limits on bytes that keep a tenant of large resources from taking the
 * event loop every tenant shares: a searchset page stops adding matches at SEARCH_PAGE_MAX_BYTES
 * (still correct FHIR paging), and a client served more than CLIENT_RESPONSE_BYTES_PER_SECOND
 * waits (429) while another client is served. (The cross-tenant p99: bench/fairness.ts.)
 */
describe('security: searchset pages held to SEARCH_PAGE_MAX_BYTES (e2e)', () => {
  let t: TestApp;
  let alice: TestUser;
  const sizes: Record<string, number> = {};
  const created: string[] = [];
  beforeAll(async () => {
    t = await createTestApp({ ...IDENTITY_TEST_ENV, SEARCH_PAGE_MAX_BYTES: String(PAGE_BYTES) });
    alice = await createUser(t, await createClient(t));
    // five of ~7 KB (two fit a page, three do not) and one of ~25 KB (over the budget alone)
    const made = [7000, 7000, 25_000, 7000, 7000, 7000];
    for (const [i, bytes] of made.entries()) {
      const res = await post(t, alice, patientOf(`Budget${i}`, bytes)).expect(201);
      sizes[res.body.id] = JSON.stringify(res.body).length;
      created.push(res.body.id);
    }
  });
  afterAll(async () => t?.close());

  const allPages = (first: string) => followPages(t, bearer(alice.access_token), first);

  it('a page holds matches while their JSON fits (at least one); next continues after the last one: each match once, in order', async () => {
    const pages = await allPages('/r4/Patient?name=Budget&_count=10');
    const ids = pages.flatMap((page) => page.entry.map((e: any) => e.resource.id as string));
    // every match exactly once, none lost between pages
    expect([...ids].sort()).toEqual(Object.keys(sizes).sort());
    expect(new Set(ids).size).toBe(ids.length);
    // in the search's order: newest first (the default sort)
    expect(ids).toEqual([...created].reverse());
    for (const page of pages) {
      expect(page.total).toBe(6);
      expect(page.entry.length).toBeGreaterThan(0);
      const bytes = page.entry.reduce((sum: number, e: any) => sum + sizes[e.resource.id], 0);
      // over the budget only when a single match is larger on its own
      if (page.entry.length > 1) expect(bytes).toBeLessThanOrEqual(PAGE_BYTES);
    }
    // newest first: 7+7 KB | 7 KB (the 25 KB one would pass the budget) | 25 KB alone | 7+7 KB
    expect(pages.map((page) => page.entry.length)).toEqual([2, 1, 1, 2]);
    // every page but the last links to a next one; self names the page's own _skip
    expect(pages.slice(0, -1).every((p) => p.link.some((l: any) => l.relation === 'next'))).toBe(true);
    expect(pages.at(-1).link.some((l: any) => l.relation === 'next')).toBe(false);
    expect(
      pages.map((p) => new URL(p.link.find((l: any) => l.relation === 'self').url).searchParams.get('_skip')),
    ).toEqual(['0', '2', '3', '4']);
  });

  it('_total=none: a page cut by the budget still has a next link', async () => {
    const res = await request(t.server)
      .get('/r4/Patient?name=Budget&_count=10&_total=none')
      .set(bearer(alice.access_token))
      .expect(200);
    expect(res.body.total).toBeUndefined();
    expect(res.body.entry).toHaveLength(2);
    const next = res.body.link.find((l: any) => l.relation === 'next');
    expect(new URL(next.url).searchParams.get('_skip')).toBe('2');
  });

  it('_summary=count and _count=0 are not affected', async () => {
    const counted = await request(t.server)
      .get('/r4/Patient?name=Budget&_summary=count')
      .set(bearer(alice.access_token))
      .expect(200);
    expect(counted.body.total).toBe(6);
    const none = await request(t.server)
      .get('/r4/Patient?name=Budget&_count=0')
      .set(bearer(alice.access_token))
      .expect(200);
    expect(none.body.entry ?? []).toHaveLength(0);
    expect(none.body.total).toBe(6);
  });
});

describe('security: response bytes per client (CLIENT_RESPONSE_BYTES_PER_SECOND) (e2e)', () => {
  let t: TestApp;
  let alice: TestUser;
  let bob: TestUser;
  beforeAll(async () => {
    t = await createTestApp({ ...IDENTITY_TEST_ENV, CLIENT_RESPONSE_BYTES_PER_SECOND: '50kb' });
    alice = await createUser(t, await createClient(t));
    bob = await createUser(t, await createClient(t));
  });
  afterAll(async () => t?.close());

  it('a client served more than its share → 429 throttled with Retry-After; another client is served; after Retry-After it is served again', async () => {
    const big = await post(t, alice, patientOf('Share', 40_000)).expect(201);
    const small = await post(t, bob, { resourceType: 'Patient', gender: 'other' }).expect(201);
    const read = (who: TestUser, id: string) =>
      request(t.server).get(`/r4/Patient/${id}`).set(bearer(who.access_token));
    const statuses: number[] = [];
    let refused: request.Response | undefined;
    for (let i = 0; i < 6 && !refused; i++) {
      const res = await read(alice, big.body.id);
      statuses.push(res.status);
      if (res.status === 429) refused = res;
    }
    // the one-second burst (50 KB) lets the first 40 KB answers through, then the share is spent
    expect(statuses[0]).toBe(200);
    expect(refused).toBeDefined();
    expect(refused!.body).toMatchObject({
      resourceType: 'OperationOutcome',
      issue: [{ code: 'throttled', diagnostics: expect.stringMatching(/CLIENT_RESPONSE_BYTES_PER_SECOND/) }],
    });
    const retryAfter = Number(refused!.headers['retry-after']);
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    // another tenant is not held back by alice's share
    await read(bob, small.body.id).expect(200);
    await new Promise((resolve) => setTimeout(resolve, retryAfter * 1000));
    await read(alice, big.body.id).expect(200);
  });

  it('a client of small answers is never refused (80 requests in a row, errors among them)', async () => {
    const small = await post(t, bob, { resourceType: 'Patient', gender: 'male' }).expect(201);
    for (let i = 0; i < 40; i++) {
      await request(t.server).get(`/r4/Patient/${small.body.id}`).set(bearer(bob.access_token)).expect(200);
      await request(t.server).get('/r4/Patient/missing-one').set(bearer(bob.access_token)).expect(404);
    }
  });
});
