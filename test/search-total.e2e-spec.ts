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
import { keysRead, recordQueries } from '@app/testing/query-plans';

/**
 * `_total` (docs/api.md "Totals", https://hl7.org/fhir/R4/search.html#total) on a real database:
 * with the cap at 5, a search of 8 matches has no total by default and with `estimate`, an exact
 * one with `accurate`; 3 and 5 matches have their exact total in every mode but `none`.
 */
describe('search totals: _total=none|estimate|accurate (e2e)', () => {
  const EXACT_UP_TO = 5;
  let t: TestApp;
  let alice: TestUser;
  /** Alice's client's other user: a token's index entries hold every user's. */
  let bob: TestUser;
  const get = (path: string, headers: Record<string, string> = bearer(alice.access_token)) =>
    request(t.server).get(path).set(headers);
  const link = (bundle: any, relation: string) =>
    bundle.link.find((l: any) => l.relation === relation)?.url as string | undefined;
  const create = (user: TestUser, family: string) =>
    request(t.server)
      .post('/r4/Patient')
      .set(bearer(user.access_token))
      .set('Content-Type', 'application/fhir+json')
      .send({ resourceType: 'Patient', name: [{ family }] })
      .expect(201);

  beforeAll(async () => {
    // METRICS_ENABLED turns the driver's command monitoring on (the query recorder listens to it).
    t = await createTestApp({
      ...IDENTITY_TEST_ENV,
      METRICS_ENABLED: 'true',
      SEARCH_TOTAL_EXACT_UP_TO: String(EXACT_UP_TO),
    });
    const client = await createClient(t);
    alice = await createUser(t, client);
    const mallory = await createUser(t, await createClient(t));
    bob = await createUser(t, client);
    for (let i = 0; i < 8; i++) await create(alice, 'Manyson');
    for (let i = 0; i < 3; i++) await create(alice, 'Fewson');
    for (let i = 0; i < EXACT_UP_TO; i++) await create(alice, 'Fiveson');
    for (let i = 0; i < 24; i++) await create(alice, 'Lotson');
    // other tenants' matches are never counted, capped or not
    for (let i = 0; i < 4; i++) await create(mallory, 'Manyson');
    await create(bob, 'Fewson');
  }, 120_000);
  afterAll(async () => t?.close());

  it('above the cap: no total and no last link by default and with estimate; next still there', async () => {
    for (const mode of ['', '&_total=estimate']) {
      const res = await get(`/r4/Patient?family=Manyson&_count=2${mode}`).expect(200);
      expect(res.body.total).toBeUndefined();
      expect(res.body.entry).toHaveLength(2);
      expect(link(res.body, 'next')).toContain('_skip=2');
      expect(link(res.body, 'last')).toBeUndefined();
    }
  });

  it('the estimate is a count that stops at the cap + 1 (reads that many index keys where the engine can)', async () => {
    const queries = await recordQueries(t.connection, () =>
      get('/r4/Patient?_count=2&_total=estimate').expect(200),
    );
    const capped = queries.filter(({ command }) => {
      const pipeline = Array.isArray(command.pipeline) ? (command.pipeline as object[]) : [];
      return (
        pipeline.some((stage) => '$group' in stage) &&
        pipeline.some((stage) => (stage as { $limit?: number }).$limit === EXACT_UP_TO + 1)
      );
    });
    expect(capped).toHaveLength(1);
    // 40 Patients of alice match; an engine that reads its index in order stops after the cap + 1
    if (process.env.TEST_DB_ORDERED_INDEXES !== 'no')
      expect(await keysRead(t.connection, capped[0])).toBeLessThanOrEqual(EXACT_UP_TO + 1);
  });

  it('above the cap: the page that reaches the last match tells the exact total', async () => {
    const res = await get('/r4/Patient?family=Manyson&_count=2&_skip=6').expect(200);
    expect(res.body.total).toBe(8);
    expect(link(res.body, 'next')).toBeUndefined();
    expect(link(res.body, 'last')).toContain('_skip=6');
  });

  it('at or below the cap: the exact total and the last link by default and with estimate', async () => {
    for (const mode of ['', '&_total=estimate']) {
      const res = await get(`/r4/Patient?family=Fewson&_count=2${mode}`).expect(200);
      expect(res.body.total).toBe(3);
      expect(link(res.body, 'last')).toContain('_skip=2');
    }
    const atCap = await get('/r4/Patient?family=Fiveson&_count=2').expect(200);
    expect(atCap.body.total).toBe(EXACT_UP_TO);
    expect(link(atCap.body, 'last')).toContain('_skip=4');
  });

  it('accurate counts every match of the caller only, with the last link', async () => {
    const res = await get('/r4/Patient?family=Manyson&_count=2&_total=accurate').expect(200);
    expect(res.body.total).toBe(8);
    expect(link(res.body, 'last')).toContain('_skip=6');
    expect(link(res.body, 'next')).toContain('_skip=2');
  });

  it('none: no total, no last link, next from the page', async () => {
    const res = await get('/r4/Patient?family=Fewson&_count=2&_total=none').expect(200);
    expect(res.body.total).toBeUndefined();
    expect(link(res.body, 'last')).toBeUndefined();
    expect(link(res.body, 'next')).toContain('_skip=2');
  });

  it('_summary=count is exact above the cap', async () => {
    const res = await get('/r4/Patient?family=Manyson&_summary=count').expect(200);
    expect(res.body.total).toBe(8);
  });

  it('an unknown _total value is 400 with an OperationOutcome, also under lenient handling', async () => {
    for (const prefer of ['handling=strict', 'handling=lenient', '']) {
      const res = await get('/r4/Patient?family=Fewson&_total=maybe', {
        ...bearer(alice.access_token),
        ...(prefer ? { Prefer: prefer } : {}),
      }).expect(400);
      expect(res.body.resourceType).toBe('OperationOutcome');
      expect(res.body.issue[0].diagnostics ?? res.body.issue[0].details?.text).toContain('_total');
    }
  });

  /**
   * One reference's matches (a patient's Observations) with a capped count: the page and its count
   * are one query (search-executor.ts), in the index's order (newest first) or sorted by a
   * parameter no index holds (date). The answers are those of the page query and a count of their
   * own (`_total=accurate` keeps them apart).
   */
  /** Every match by walking next: [date, id] in served order, and the queries of each page. */
  const walk = async (path: string) => {
    const served: Array<[string, string]> = [];
    const queries: number[] = [];
    let bundles: any[] = [];
    let url: string | undefined = path;
    while (url) {
      let body: any;
      const recorded = await recordQueries(t.connection, async () => {
        body = (await get(url!).expect(200)).body;
      });
      queries.push(recorded.filter((q) => q.collection === 'resources').length);
      bundles = [...bundles, body];
      for (const entry of body.entry ?? [])
        served.push([entry.resource.effectiveDateTime, entry.resource.id]);
      url = link(body, 'next')?.slice(t.settings.urls.base.length);
    }
    return { served, queries, bundles };
  };

  /**
   * One token's matches in its index's order (`Observation?code=X`, with a date range) with a
   * capped count: the page and its count are one query while the page lies within the cap
   * (search-executor.ts). The answers are those of the page query and a count of their own
   * (`_total=accurate` keeps them apart); another user's matches on the same token are neither
   * served nor counted.
   */
  describe("one token's matches: the count in the page's query", () => {
    const CODE = 'http://example.org/tokens|counted';
    const observe = (user: TestUser, date: string) =>
      request(t.server)
        .post('/r4/Observation')
        .set(bearer(user.access_token))
        .set('Content-Type', 'application/fhir+json')
        .send({
          resourceType: 'Observation',
          status: 'final',
          code: { coding: [{ system: 'http://example.org/tokens', code: 'counted' }] },
          effectiveDateTime: date,
        })
        .expect(201);
    beforeAll(async () => {
      // alice: 8 in 2020 (two on each day), 3 in 2019; bob: 4 in 2020
      for (let i = 0; i < 8; i++) await observe(alice, `2020-01-${10 + Math.floor(i / 2)}`);
      for (let i = 0; i < 3; i++) await observe(alice, `2019-05-0${i + 1}`);
      for (let i = 0; i < 4; i++) await observe(bob, `2020-01-1${i}`);
    }, 60_000);
    for (const [name, search, matches] of [
      ['the token alone', `code=${CODE}`, 11],
      ['the token and a date range', `code=${CODE}&date=ge2020-01-01&date=lt2021-01-01`, 8],
      ['the token and a date range, below the cap', `code=${CODE}&date=lt2020-01-01`, 3],
      ['the token and a date range, at the cap minus one', `code=${CODE}&date=ge2020-01-12`, 4],
    ] as const) {
      it(`${name}: every match once, as the page query and a count of their own serve them`, async () => {
        const path = `/r4/Observation?${search}&_count=2`;
        const walked = await walk(path);
        const served = walked.served.map(([, id]) => id);
        const totals = walked.bundles.map((bundle) => bundle.total as number | undefined);
        const { queries } = walked;
        expect(served).toHaveLength(matches);
        expect(new Set(served).size).toBe(matches);
        expect(walked.served).toEqual((await walk(`${path}&_total=accurate`)).served);
        // the first page (within the cap) is one query, its count inside it
        expect(queries[0]).toBe(1);
        if (matches <= EXACT_UP_TO) expect(totals).toEqual(totals.map(() => matches));
        else {
          expect(totals.slice(0, -1).every((total) => total === undefined)).toBe(true);
          // the last page reaches the last match: it tells the total
          expect(totals[totals.length - 1]).toBe(matches);
        }
        const accurate = await get(`${path}&_total=accurate`).expect(200);
        expect(accurate.body.total).toBe(matches);
      });
    }
  });

  describe("one reference's matches: the count in the page's query", () => {
    const observationsOf = async (patient: string, count: number) => {
      const id = (await create(alice, `Sortson${patient}`)).body.id as string;
      for (let i = 0; i < count; i++)
        await request(t.server)
          .post('/r4/Observation')
          .set(bearer(alice.access_token))
          .set('Content-Type', 'application/fhir+json')
          .send({
            resourceType: 'Observation',
            status: 'final',
            code: { text: 'sorted' },
            subject: { reference: `Patient/${id}` },
            // two on each day: the id breaks their tie
            effectiveDateTime: `2020-01-${String(10 + Math.floor(i / 2)).padStart(2, '0')}`,
          })
          .expect(201);
      return id;
    };
    const byDate = (served: Array<[string, string]>) =>
      [...served].sort(([d1, i1], [d2, i2]) => (d1 !== d2 ? (d1 < d2 ? 1 : -1) : i1 < i2 ? -1 : 1));
    /** The same search's pages with `_total=accurate`: a page query and a count of their own. */
    const apart = async (path: string) => (await walk(`${path}&_total=accurate`)).served;

    for (const [order, sort] of [
      ['newest first (the index order)', ''],
      ['oldest first (the index walked backwards)', '&_sort=_lastUpdated'],
      ['by date (no index holds it)', '&_sort=-date'],
    ] as const) {
      describe(order, () => {
        it('below and at the cap: exact total and last link, one query per page, every match once', async () => {
          for (const count of [3, EXACT_UP_TO]) {
            const patient = await observationsOf(`b${count}${sort}`, count);
            const path = `/r4/Observation?patient=${patient}${sort}&_count=2`;
            const { served, queries, bundles } = await walk(path);
            expect(served).toHaveLength(count);
            expect(new Set(served.map(([, id]) => id)).size).toBe(count);
            expect(served).toEqual(await apart(path));
            if (sort === '&_sort=-date') expect(served).toEqual(byDate(served));
            expect(queries).toEqual(bundles.map(() => 1));
            for (const bundle of bundles) {
              expect(bundle.total).toBe(count);
              expect(link(bundle, 'last')).toContain(`_skip=${Math.floor((count - 1) / 2) * 2}`);
            }
          }
        });

        it('above the cap: no total and no last link by default, exact with accurate; every match once in order', async () => {
          const patient = await observationsOf(`a8${sort}`, 8);
          const path = `/r4/Observation?patient=${patient}${sort}&_count=3`;
          const { served, bundles, queries } = await walk(path);
          expect(served).toHaveLength(8);
          expect(new Set(served.map(([, id]) => id)).size).toBe(8);
          expect(served).toEqual(await apart(path));
          if (sort === '&_sort=-date') expect(served).toEqual(byDate(served));
          expect(queries).toEqual([1, 1, 1]);
          // the last page (skip 6) reaches the last match: it tells the total
          expect(bundles.map((bundle) => bundle.total)).toEqual([undefined, undefined, 8]);
          expect(link(bundles[0], 'last')).toBeUndefined();
          const accurate = await get(`${path}&_total=accurate`).expect(200);
          expect(accurate.body.total).toBe(8);
          expect(link(accurate.body, 'last')).toContain('_skip=6');
        });
      });
    }
  });
});
