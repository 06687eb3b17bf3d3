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

/** A Patient whose stored JSON is about `bytes` long (narrative text). */
function patientOf(id: string, family: string, bytes: number): Record<string, unknown> {
  return {
    resourceType: 'Patient',
    id,
    name: [{ family }],
    text: {
      status: 'generated',
      div: `<div xmlns="http://www.w3.org/1999/xhtml">${'x'.repeat(bytes)}</div>`,
    },
  };
}

/**
 * The page byte budget (SEARCH_PAGE_MAX_BYTES, docs/security.md "Page byte budget") on every
 * paged answer besides searchsets: history (instance, type, system). A page holds entries while
 * their JSON fits, at least one; `next` continues right after the last one: each version once.
 */
describe('security: history pages held to SEARCH_PAGE_MAX_BYTES (e2e)', () => {
  let t: TestApp;
  let alice: TestUser;
  const versions: string[] = [];
  beforeAll(async () => {
    t = await createTestApp({ ...IDENTITY_TEST_ENV, SEARCH_PAGE_MAX_BYTES: String(PAGE_BYTES) });
    alice = await createUser(t, await createClient(t));
    // one Patient with 6 versions of ~7 KB (two fit a page) and one of ~25 KB (over the budget alone)
    const sizes = [7000, 7000, 25_000, 7000, 7000, 7000];
    for (const [i, bytes] of sizes.entries()) {
      const res = await request(t.server)
        .put('/r4/Patient/budget-h')
        .set(bearer(alice.access_token))
        .set('Content-Type', 'application/fhir+json')
        .send(JSON.stringify(patientOf('budget-h', `V${i}`, bytes)));
      expect(res.status).toBeLessThan(300);
      versions.unshift(String(res.body.meta.versionId));
    }
  });
  afterAll(async () => t?.close());

  const allPages = (first: string) => followPages(t, bearer(alice.access_token), first);

  it.each([
    ['instance', '/r4/Patient/budget-h/_history?_count=10'],
    ['type', '/r4/Patient/_history?_count=10'],
    ['system', '/r4/_history?_count=10'],
  ])(
    '%s history: each page within the budget (or one entry), every version once, in order',
    async (_, path) => {
      const pages = await allPages(path);
      expect(pages.length).toBeGreaterThan(1);
      for (const page of pages) {
        const bytes = page.entry.map((e: any) => JSON.stringify(e.resource).length);
        expect(bytes.length === 1 || bytes.reduce((a: number, b: number) => a + b, 0) <= PAGE_BYTES).toBe(
          true,
        );
      }
      const served = pages.flatMap((page) =>
        page.entry.map((e: any) => `${e.fullUrl}|${e.resource.meta.versionId}`),
      );
      expect(served).toHaveLength(pages[0].total);
      expect(new Set(served).size).toBe(served.length);
      const patient = served.filter((s) => s.includes('/Patient/budget-h|')).map((s) => s.split('|')[1]);
      expect(patient).toEqual(versions);
    },
  );

  const put = (path: string, body: Record<string, unknown>) =>
    request(t.server)
      .put(path)
      .set(bearer(alice.access_token))
      .set('Content-Type', 'application/fhir+json')
      .send(JSON.stringify(body));
  const observation = (id: string, patient: string, code: string) => ({
    resourceType: 'Observation',
    id,
    status: 'final',
    code: { coding: [{ system: 'http://loinc.org', code }] },
    subject: { reference: `Patient/${patient}` },
  });
  const pageBytes = (page: any) =>
    page.entry
      .filter((e: any) => e.search?.mode !== 'outcome')
      .reduce((sum: number, e: any) => sum + JSON.stringify(e.resource).length, 0);

  it('_include additions count against the budget: fewer matches per page, each with its subject; every match once', async () => {
    for (let i = 0; i < 4; i++) {
      await put(`/r4/Patient/inc-${i}`, patientOf(`inc-${i}`, `Inc${i}`, 7000)).expect(201);
      await put(`/r4/Observation/inc-obs-${i}`, observation(`inc-obs-${i}`, `inc-${i}`, 'budget-inc')).expect(
        201,
      );
    }
    const pages = await allPages(
      '/r4/Observation?code=http://loinc.org|budget-inc&_include=Observation:subject&_count=10',
    );
    expect(pages.length).toBeGreaterThan(1);
    const matches: string[] = [];
    for (const page of pages) {
      expect(pageBytes(page)).toBeLessThanOrEqual(PAGE_BYTES);
      const onPage = page.entry.filter((e: any) => e.search.mode === 'match');
      const included = new Set(
        page.entry
          .filter((e: any) => e.search.mode === 'include')
          .map((e: any) => `Patient/${e.resource.id}`),
      );
      for (const e of onPage) expect(included.has(e.resource.subject.reference)).toBe(true);
      matches.push(...onPage.map((e: any) => e.resource.id as string));
    }
    expect(matches.sort()).toEqual(['inc-obs-0', 'inc-obs-1', 'inc-obs-2', 'inc-obs-3']);
  });

  it('$everything pages: within the budget (or one entry), every compartment resource once', async () => {
    await put('/r4/Patient/ev', patientOf('ev', 'Ev', 100)).expect(201);
    for (let i = 0; i < 5; i++) {
      const obs = { ...observation(`ev-obs-${i}`, 'ev', 'budget-ev'), note: [{ text: 'n'.repeat(7000) }] };
      await put(`/r4/Observation/ev-obs-${i}`, obs).expect(201);
    }
    const pages = await allPages('/r4/Patient/ev/$everything?_count=50');
    expect(pages.length).toBeGreaterThan(1);
    const served: string[] = [];
    for (const page of pages) {
      const entries = page.entry.filter((e: any) => e.search?.mode !== 'outcome');
      expect(entries.length === 1 || pageBytes(page) <= PAGE_BYTES).toBe(true);
      served.push(...entries.map((e: any) => `${e.resource.resourceType}/${e.resource.id}`));
    }
    expect(new Set(served).size).toBe(served.length);
    expect(served).toHaveLength(pages[0].total);
    expect(served).toEqual(
      expect.arrayContaining(['Patient/ev', 'Observation/ev-obs-0', 'Observation/ev-obs-4']),
    );
  });
});

/**
 * Every answer is charged to the client's response-byte share (docs/security.md "Response bytes
 * per client"), not only resources and Bundles: error OperationOutcomes too.
 */
describe('security: error answers are charged to the byte share (e2e)', () => {
  let t: TestApp;
  let alice: TestUser;
  beforeAll(async () => {
    t = await createTestApp({ ...IDENTITY_TEST_ENV, CLIENT_RESPONSE_BYTES_PER_SECOND: '1kb' });
    alice = await createUser(t, await createClient(t));
  });
  afterAll(async () => t?.close());

  it('a client answered only 404s is throttled once they exceed its share', async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 40 && !statuses.includes(429); i++) {
      const res = await request(t.server)
        .get(`/r4/Patient/missing-${i}-${'x'.repeat(40)}`)
        .set(bearer(alice.access_token));
      statuses.push(res.status);
    }
    expect(statuses[0]).toBe(404);
    expect(statuses).toContain(429);
  });
});
