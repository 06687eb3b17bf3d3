import { AsyncLocalStorage } from 'node:async_hooks';
import request from 'supertest';
import { ResourceRepository } from '../src/storage/resource.repository';
import {
  bearer,
  createClient,
  createTestApp,
  createUser,
  followPages,
  linkPath,
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
 * Runs `action` while counting the resource JSON (`json` fields) the app's ResourceRepository hands
 * back, whatever the method: what this process decoded from the database for the request.
 */
async function jsonBytesReadDuring<T>(
  t: TestApp,
  action: () => Promise<T>,
): Promise<{ result: T; bytes: number }> {
  const repository = t.app.get<ResourceRepository, Record<string, unknown>>(ResourceRepository);
  let bytes = 0;
  const count = (value: unknown): void => {
    if (Array.isArray(value)) return value.forEach(count);
    if (value === null || typeof value !== 'object') return;
    // `window`: the first `$everything` page's compartment resources come with their counts
    const { json, docs, window } = value as { json?: unknown; docs?: unknown; window?: unknown };
    if (typeof json === 'string') bytes += json.length;
    if (docs !== undefined) count(docs);
    if (window !== undefined) count(window);
  };
  const names = Object.getOwnPropertyNames(ResourceRepository.prototype).filter(
    (name) => name !== 'constructor' && typeof repository[name] === 'function',
  );
  // what a method hands back through another one is counted once, where it leaves the repository
  const within = new AsyncLocalStorage<true>();
  for (const name of names) {
    const original = repository[name] as (...args: unknown[]) => unknown;
    repository[name] = function (this: unknown, ...args: unknown[]) {
      const nested = within.getStore() === true;
      const out = within.run(true, () => original.apply(this, args));
      if (nested) return out;
      return out instanceof Promise ? out.then((value) => (count(value), value)) : out;
    };
  }
  try {
    return { result: await action(), bytes };
  } finally {
    for (const name of names) delete repository[name];
  }
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
  const pathOf = linkPath;

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

  it('a page cut by the budget that saw every match tells the total from what it read, without the count (which reads every match again)', async () => {
    for (let i = 0; i < 4; i++)
      expect((await put(`/r4/Patient/counted-${i}`, patientOf(`counted-${i}`, 'Counted', 7000))).status).toBe(
        201,
      );
    // a count the answer relied on would show as 999
    const countBy = jest.spyOn(t.app.get(ResourceRepository), 'countBy').mockResolvedValue(999);
    const search = (query: string) =>
      request(t.server)
        .get(`/r4/Patient?family=Counted&${query}`)
        .set(bearer(alice.access_token))
        .expect(200);
    try {
      const cut = await search('_count=10');
      expect(cut.body.entry.length).toBeLessThan(4);
      expect(cut.body.total).toBe(4);
      const later = await search('_count=10&_skip=2');
      expect(later.body.total).toBe(4);
      // more matches than the page looked at: only a count can tell
      expect((await search('_count=1')).body.total).toBe(999);
    } finally {
      countBy.mockRestore();
    }
  });
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
    const first = '/r4/Observation?code=http://loinc.org|budget-inc&_include=Observation:subject&_count=10';
    // the first page is cut in half until its additions fit: the targets' JSON comes with them
    // once (one budget at most, when all of them fit it), then only what the page serves is read
    const read = await jsonBytesReadDuring(t, () =>
      request(t.server).get(first).set(bearer(alice.access_token)).expect(200),
    );
    expect(read.bytes).toBeLessThanOrEqual(2 * PAGE_BYTES);
    const pages = await allPages(first);
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

  it('_revinclude of many large resources reads only the JSON the page serves', async () => {
    await put('/r4/Patient/rev', patientOf('rev', 'Rev', 100)).expect(201);
    for (let i = 0; i < 30; i++) {
      const obs = { ...observation(`rev-obs-${i}`, 'rev', 'budget-rev'), note: [{ text: 'r'.repeat(7000) }] };
      await put(`/r4/Observation/rev-obs-${i}`, obs).expect(201);
    }
    const read = await jsonBytesReadDuring(t, () =>
      request(t.server)
        .get('/r4/Patient?_id=rev&_revinclude=Observation:subject')
        .set(bearer(alice.access_token))
        .expect(200),
    );
    const page = read.result.body;
    const included = page.entry.filter((e: any) => e.search.mode === 'include');
    expect(included.length).toBeGreaterThan(0);
    expect(pageBytes(page)).toBeLessThanOrEqual(PAGE_BYTES);
    // before: all 30 Observations (~210 KB) were read, then trimmed to the budget
    expect(read.bytes).toBeLessThanOrEqual(PAGE_BYTES + 1000);
    expect(read.bytes).toBeGreaterThanOrEqual(pageBytes(page));
  });

  // One reference's search is one query that counts the matches and holds the page's rows beside
  // the count; rows before a later page are held too, so each one's JSON is held only when that
  // many of its size fit the budget (the others are read by key when served).
  it("a patient's large Observations paged newest first and by _sort=-date: within the budget, each once, the JSON read held to it", async () => {
    await put('/r4/Patient/paged', patientOf('paged', 'Paged', 100)).expect(201);
    for (let i = 0; i < 12; i++) {
      const obs = {
        ...observation(`paged-obs-${i}`, 'paged', 'budget-paged'),
        effectiveDateTime: `2020-01-${String(i + 1).padStart(2, '0')}`,
        note: [{ text: 'p'.repeat(7000) }],
      };
      await put(`/r4/Observation/paged-obs-${i}`, obs).expect(201);
    }
    for (const sort of ['', '&_sort=-date']) {
      const served: string[] = [];
      let path: string | undefined = `/r4/Observation?patient=Patient/paged${sort}&_count=5`;
      while (path) {
        const read = await jsonBytesReadDuring(t, () =>
          request(t.server).get(path!).set(bearer(alice.access_token)).expect(200),
        );
        const page = read.result.body;
        expect(page.total).toBe(12);
        expect(page.entry.length === 1 || pageBytes(page) <= PAGE_BYTES).toBe(true);
        expect(read.bytes).toBeLessThanOrEqual(PAGE_BYTES);
        served.push(...page.entry.map((e: any) => e.resource.id));
        const next = page.link.find((l: any) => l.relation === 'next')?.url;
        path = next && linkPath(next);
      }
      expect([...served].sort()).toEqual(Array.from({ length: 12 }, (_, i) => `paged-obs-${i}`).sort());
      if (sort) expect(served).toEqual(Array.from({ length: 12 }, (_, i) => `paged-obs-${11 - i}`));
    }
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

  it('$everything reads only the JSON its page serves: 20 large Practitioners referenced by one Observation, _count=1 pages', async () => {
    const practitioners = Array.from({ length: 20 }, (_, i) => `amp-pr-${String(i).padStart(2, '0')}`);
    for (const id of practitioners) {
      const text = {
        status: 'generated',
        div: `<div xmlns="http://www.w3.org/1999/xhtml">${'p'.repeat(15_000)}</div>`,
      };
      await put(`/r4/Practitioner/${id}`, { resourceType: 'Practitioner', id, text }).expect(201);
    }
    await put('/r4/Patient/amp', patientOf('amp', 'Amp', 100)).expect(201);
    const obs = {
      ...observation('amp-obs', 'amp', 'budget-amp'),
      performer: practitioners.map((id) => ({ reference: `Practitioner/${id}` })),
    };
    await put('/r4/Observation/amp-obs', obs).expect(201);
    const read = await jsonBytesReadDuring(t, () =>
      request(t.server)
        .get('/r4/Patient/amp/$everything?_count=1')
        .set(bearer(alice.access_token))
        .expect(200),
    );
    // before: every outside resource (20 × ~15 KB) was read to serve the first entry
    // the Patient first; its compartment (the Observation, the store's Provenance of it) and the
    // 20 Practitioners after: a page short of the end has no total unless asked for
    expect(read.result.body.entry.map((e: any) => e.resource.id)).toEqual(['amp']);
    expect(read.result.body.total).toBeUndefined();
    expect(read.bytes).toBeLessThanOrEqual(pageBytes(read.result.body) + 1000);
    const counted = await request(t.server)
      .get('/r4/Patient/amp/$everything?_count=1&_total=accurate')
      .set(bearer(alice.access_token))
      .expect(200);
    expect(counted.body.total).toBe(23);
    const later = await jsonBytesReadDuring(t, () =>
      request(t.server)
        .get('/r4/Patient/amp/$everything?_count=3&_skip=6')
        .set(bearer(alice.access_token))
        .expect(200),
    );
    // one ~15 KB Practitioner fits the 20 KB budget at a time: one entry, what was read is what is served
    expect(later.result.body.entry.map((e: any) => e.resource.id)).toEqual(['amp-pr-03']);
    expect(later.result.body.total).toBe(23);
    expect(later.bytes).toBeLessThanOrEqual(pageBytes(later.result.body) + 1000);
    const served = (await allPages('/r4/Patient/amp/$everything?_count=5')).flatMap((page) =>
      page.entry.map((e: any) => `${e.resource.resourceType}/${e.resource.id}`),
    );
    expect(served).toEqual([
      'Patient/amp',
      'Observation/amp-obs',
      expect.stringMatching(/^Provenance\//),
      ...practitioners.map((id) => `Practitioner/${id}`),
    ]);
  });

  const postBundle = (bundle: Record<string, unknown>, prefer?: string) => {
    const req = request(t.server)
      .post('/r4')
      .set(bearer(alice.access_token))
      .set('Content-Type', 'application/fhir+json');
    if (prefer) req.set('Prefer', prefer);
    return req.send(JSON.stringify(bundle));
  };
  const gets = (kind: 'batch' | 'transaction', urls: string[]) => ({
    resourceType: 'Bundle',
    type: kind,
    entry: urls.map((url) => ({ request: { method: 'GET', url } })),
  });
  const nextOf = (bundle: any) =>
    (bundle.link as Array<{ relation: string; url: string }>).find((l) => l.relation === 'next')?.url;
  const linkOf = (bundle: any, relation: string) =>
    (bundle.link as Array<{ relation: string; url: string }>).find((l) => l.relation === relation)?.url;
  const idsOf = (pages: any[]) =>
    pages.flatMap((page) => (page.entry ?? []).map((e: any) => e.resource.id as string));
  const batchIds = Array.from({ length: 8 }, (_, i) => `budget-b${i}`);
  let seeded: Promise<void> | undefined;
  const seedBatch = () =>
    (seeded ??= (async () => {
      for (const id of batchIds)
        await put(`/r4/Patient/${id}`, patientOf(id, 'BatchBudget', 6000)).expect(201);
    })());
  const resourceBytes = (res: request.Response) =>
    res.body.entry.reduce((sum: number, e: any) => {
      if (e.resource?.resourceType !== 'Bundle')
        return sum + (e.resource ? JSON.stringify(e.resource).length : 0);
      return sum + pageBytes({ entry: e.resource.entry ?? [] });
    }, 0);

  it.each(['batch', 'transaction'] as const)(
    "a %s of 20 big-page searches: one budget for the response; each entry's total and next exact, next serves the rest",
    async (kind) => {
      await seedBatch();
      const search = 'Patient?family=BatchBudget&_count=10';
      const res = await postBundle(
        gets(
          kind,
          Array.from({ length: 20 }, () => search),
        ),
      ).expect(200);
      expect(res.body.type).toBe(`${kind}-response`);
      // alone, each entry would serve a whole page (three of these Patients): 20 pages, ~360 KB
      expect(resourceBytes(res)).toBeLessThanOrEqual(PAGE_BYTES + 6500);
      expect(res.text.length).toBeLessThan(PAGE_BYTES + 6500 + 20 * 1500);
      const served = res.body.entry.map((e: any) => (e.resource.entry ?? []).length as number);
      // three fit the budget; the next entry serves the one match that crosses it; the rest none
      expect(served.slice(0, 2)).toEqual([3, 1]);
      expect(served.slice(2).every((n: number) => n === 0)).toBe(true);
      for (const entry of res.body.entry) {
        expect(entry.response.status).toBe('200 OK');
        const page = entry.resource;
        expect(page.total).toBe(batchIds.length);
        // an entry that served nothing points to that same page
        if (page.entry === undefined || page.entry.length === 0)
          expect(new URL(nextOf(page)!).search).toBe(new URL(linkOf(page, 'self')!).search);
        const rest = await allPages(pathOf(nextOf(page)!));
        expect(idsOf([page, ...rest]).sort()).toEqual([...batchIds].sort());
      }
    },
  );

  it('an entry with no budget left and _total=none has a next link only when a match is there', async () => {
    await seedBatch();
    const res = await postBundle(
      gets('batch', [
        'Patient?family=BatchBudget&_count=10',
        'Patient/budget-b0',
        'Patient?family=BatchBudget&_count=10&_total=none',
        'Patient?family=NobodyIsCalledThis&_count=10&_total=none',
        'Patient?family=BatchBudget&_count=10&_skip=8&_total=none',
      ]),
    ).expect(200);
    const [, crossing, pending, none, beyond] = res.body.entry.map((e: any) => e.resource);
    expect(crossing.id).toBe('budget-b0');
    expect(pending.entry ?? []).toHaveLength(0);
    expect(pending.total).toBeUndefined();
    expect(idsOf(await allPages(pathOf(nextOf(pending)!))).sort()).toEqual([...batchIds].sort());
    expect(nextOf(none)).toBeUndefined();
    expect(nextOf(beyond)).toBeUndefined();
  });

  it('reads and vreads past the budget are not served: 400 too-costly naming the url; the ones before are', async () => {
    const reads = [
      'Patient/budget-b0',
      'Patient/budget-b1/_history/1',
      'Patient/budget-b2',
      'Patient/budget-b3',
      'Patient/budget-b4',
    ];
    await seedBatch();
    const res = await postBundle(gets('batch', reads)).expect(200);
    const statuses = res.body.entry.map((e: any) => e.response.status as string);
    // 6 KB each against 20 KB: four served (the fourth crosses the budget), the fifth refused
    expect(statuses).toEqual(['200 OK', '200 OK', '200 OK', '200 OK', '400 Bad Request']);
    const refused = res.body.entry[4].response.outcome;
    expect(refused.issue[0].code).toBe('too-costly');
    expect(refused.issue[0].diagnostics).toContain('Patient/budget-b4');
    expect(res.body.entry[4].resource).toBeUndefined();
    expect(res.body.entry.slice(0, 4).map((e: any) => e.resource.id)).toEqual([
      'budget-b0',
      'budget-b1',
      'budget-b2',
      'budget-b3',
    ]);
  });

  it('Prefer: return=representation answers minimal once the budget is spent; everything is stored; later GETs page', async () => {
    const ids = Array.from({ length: 5 }, (_, i) => `budget-rep${i}`);
    const bundle = {
      resourceType: 'Bundle',
      type: 'transaction',
      entry: [
        ...ids.map((id) => ({
          resource: patientOf(id, 'BudgetRep', 6000),
          request: { method: 'PUT', url: `Patient/${id}` },
        })),
        { request: { method: 'GET', url: 'Patient?family=BudgetRep' } },
      ],
    };
    const res = await postBundle(bundle, 'return=representation').expect(200);
    const writes = res.body.entry.slice(0, 5);
    expect(writes.map((e: any) => e.response.status)).toEqual(Array(5).fill('201 Created'));
    expect(writes.map((e: any) => e.resource?.id)).toEqual([...ids.slice(0, 4), undefined]);
    expect(writes[4].response.location).toMatch(/^Patient\/budget-rep4\/_history\/1$/);
    const search = res.body.entry[5].resource;
    expect(search.total).toBe(5);
    expect(search.entry ?? []).toHaveLength(0);
    expect(idsOf(await allPages(pathOf(nextOf(search)!))).sort()).toEqual(ids);
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
