import request from 'supertest';
import {
  bearer,
  createTestApp,
  createUser,
  IDENTITY_TEST_ENV,
  TestApp,
  TestClient,
  TestUser,
} from '@app/testing';
import {
  explainQuery,
  keysRead,
  recordQueries,
  scanViolations,
  sortsInMemory,
  type PlanReport,
} from '@app/testing/query-plans';
import type { SyntheaRecord } from '@app/testing/synthea';
import { DirectoryService } from '../src/modules/directory/directory.service';
import { ExportPlanner, type ExportScope } from '../src/modules/bulk-export/export-planner';
import type { TenantContext } from '../src/tenancy/tenant-context';
import { PurgeRepository } from '../src/modules/purge/purge.repository';
import {
  credentialHeaders,
  HOT_PATHS,
  seedHotPaths,
  type Credential,
  type HotPathFixture,
} from './query-plans.catalogue';

/**
 * Every hot query is an equality/range match on indexed fields with the client key in
 * the filter, proven with `explain`. Each case serves a real request through the app with command
 * monitoring on, then explains every query command the repositories sent (test/support/
 * query-plans.ts): none may be a collection scan, each must read an index. The queries are the
 * code's own, so this breaks when a repository or the search lib drifts. The requests are the
 * hot-path catalogue (query-plans.catalogue.ts) that the routing suite on the cluster runs too.
 */
describe('query plans: index scans for every hot query (e2e)', () => {
  jest.setTimeout(60_000);
  let t: TestApp;
  let fixture: HotPathFixture;
  let client: TestClient;
  let alice: TestUser;
  let record: SyntheaRecord;
  const FHIR_JSON = 'application/fhir+json';

  beforeAll(async () => {
    // METRICS_ENABLED turns the driver's command monitoring on (the recorder listens to it).
    t = await createTestApp({ ...IDENTITY_TEST_ENV, DIRECTORY_SEED: 'false', METRICS_ENABLED: 'true' });
    fixture = await seedHotPaths(t);
    ({ client, alice, record } = fixture);
  }, 180_000);
  afterAll(async () => t?.close());

  const userAuth = () => bearer(alice.access_token);

  /** Explains every query `run` made; fails on any collection scan. Returns the reports. */
  async function plansOf(run: () => Promise<unknown>): Promise<PlanReport[]> {
    const queries = await recordQueries(t.connection, run);
    // one at a time: dozens at once wait on the driver's pool past its timeout on a loaded machine
    const reports: PlanReport[] = [];
    for (const query of queries) reports.push(await explainQuery(t.connection, query));
    expect(reports.length).toBeGreaterThan(0);
    expect(scanViolations(reports)).toEqual([]);
    return reports;
  }

  const getOk = (path: string, headers: Record<string, string>) => async () => {
    const res = await request(t.server).get(path).set(headers);
    if (res.status !== 200) throw new Error(`${path}: ${res.status} ${res.text.slice(0, 300)}`);
    return res;
  };

  /**
   * The planner may pick another index of the tenant prefix on a small collection (DocumentDB costs
   * plans from statistics): that is an index scan too. What must hold is that the search's own index
   * can serve the query: explained with that index as a hint, it is an index scan of it.
   */
  async function expectServedBy(reports: PlanReport[], index: string): Promise<void> {
    // the page query: a find, or the aggregation that sorts and limits before it projects
    const isPage = ({ command }: PlanReport['query']) =>
      command.find !== undefined ||
      (Array.isArray(command.pipeline) && (command.pipeline as object[]).some((stage) => '$sort' in stage));
    const searches = reports.filter(
      (report) => report.query.collection === 'resources' && isPage(report.query),
    );
    expect(searches.length).toBeGreaterThan(0);
    const hinted = await explainQuery(t.connection, searches[0].query, index);
    expect(scanViolations([hinted])).toEqual([]);
    expect(hinted.indexes).toContain(index);
  }

  for (const group of new Set(HOT_PATHS.map((path) => path.group))) {
    describe(group, () => {
      for (const path of HOT_PATHS.filter((p) => p.group === group)) {
        it(path.name, async () => {
          for (const credential of path.credentials) {
            const reports = await plansOf(() => path.run(fixture, credentialHeaders(fixture, credential)));
            if (path.index) await expectServedBy(reports, path.index);
          }
        });
      }
    });
  }

  /**
   * A page of a type's search in lastUpdated order runs on the lastUpdated index, one in `_id`
   * order on the primary key (the user's own index for a user). MongoDB and DocumentDB with the
   * extended RUM (the default kit) read it in order and stop after the page, no `SORT` stage; the
   * 0.108 kit (`npm run test:kit-0.108`) sorts every match (docs/storage.md "Sorted pages").
   */
  describe('sorted pages: the lastUpdated index or the key, read in order where the engine can', () => {
    const sortsEveryMatch = process.env.TEST_DB_ORDERED_INDEXES === 'no';
    /** A count's `$group` (`countDocuments`): nothing but the number of matches. */
    const onlyCounts = (stage: object) =>
      '$group' in stage && Object.keys(stage.$group as object).every((key) => key === '_id' || key === 'n');
    const pageQuery = (reports: PlanReport[]) =>
      reports.filter(
        ({ query }) =>
          query.collection === 'resources' &&
          Array.isArray(query.command.pipeline) &&
          (query.command.pipeline as object[]).some((stage) => '$sort' in stage),
      );
    const PAGE = 5;
    const lastUpdated = [
      ['user', 'user_type_lastUpdated'],
      ['client', 'type_lastUpdated'],
    ] as const;
    // `_id` within one type: the user's (type, key) index, the client's primary key
    const keyOrder = [
      ['user', 'user_type'],
      ['client', '_id_'],
    ] as const;
    // one reference's resources of one type, newest first: the references index holds (lu, id) after them
    const references = [
      ['user', 'search_references'],
      ['client', 'search_references'],
    ] as const;
    // [name, search, index per credential, whether 0.108's SORT is asserted too, whether the page's
    // query also counts (one reference's or token's matches: search-executor.ts)]
    const cases: Array<
      [
        string,
        string | ((f: HotPathFixture) => string),
        readonly (readonly [Credential, string])[],
        boolean,
        boolean?,
      ]
    > = [
      ['_lastUpdated range', `Observation?_lastUpdated=ge2020-01-01&_count=${PAGE}`, lastUpdated, true],
      ['_sort=-_lastUpdated', `Observation?_sort=-_lastUpdated&_count=${PAGE}`, lastUpdated, true],
      ['plain type search (default order, newest first)', `Observation?_count=${PAGE}`, lastUpdated, true],
      // the index walked backwards (ties by id descending: filter-builder.ts buildSort)
      [
        '_sort=_lastUpdated (oldest first)',
        `Observation?_sort=_lastUpdated&_count=${PAGE}`,
        lastUpdated,
        true,
      ],
      ['_sort=_id', `Observation?_sort=_id&_count=${PAGE}`, keyOrder, false],
      ['_sort=-_id', `Observation?_sort=-_id&_count=${PAGE}`, keyOrder, false],
      // one equality: references to this server are stored and searched in one (relative) form
      [
        "a patient's Observations (a reference, default order)",
        (f) => `Observation?patient=Patient/${f.record.patientId}&_count=${PAGE}`,
        references,
        true,
        true,
      ],
      [
        "a patient's Observations by the absolute URL of this server",
        (f) => `Observation?patient=${t.settings.urls.base}/r4/Patient/${f.record.patientId}&_count=${PAGE}`,
        references,
        true,
        true,
      ],
      // `patient` is declared for Patient and Group but selects Patient: a bare id is one reference
      [
        "a patient's Observations by bare id",
        (f) => `Observation?patient=${f.record.patientId}&_count=${PAGE}`,
        references,
        true,
        true,
      ],
      // one token's resources, newest first: the token index holds (lu, id) after the token; with
      // the capped count (the default) one query reads them up to the cap, as the count would
      [
        'vital signs (a token, default order)',
        `Observation?category=vital-signs&_count=${PAGE}`,
        [
          ['user', 'search_tok'],
          ['client', 'search_tok'],
        ],
        false,
        true,
      ],
      // without a count the page query stops after its rows
      [
        'vital signs without a total (a token, default order, `_total=none`)',
        `Observation?category=vital-signs&_count=${PAGE}&_total=none`,
        [
          ['user', 'search_tok'],
          ['client', 'search_tok'],
        ],
        false,
      ],
    ];
    for (const [name, path, indexes, sortAssertedOn0108, countedInPage] of cases) {
      it(name, async () => {
        for (const [credential, index] of indexes) {
          const search = typeof path === 'string' ? path : path(fixture);
          let total: number | undefined;
          const reports = await plansOf(async () => {
            total = (
              (await getOk(`/r4/${search}`, credentialHeaders(fixture, credential))()).body as {
                total?: number;
              }
            ).total;
          });
          const pages = pageQuery(reports);
          expect(pages.length).toBe(1);
          for (const page of pages) {
            expect(page.indexes).toContain(index);
            // 0.108 sorts the lastUpdated pages; whether it sorts a primary key read is left open
            if (!sortsEveryMatch || sortAssertedOn0108) expect(sortsInMemory(page)).toBe(sortsEveryMatch);
            if (!sortsEveryMatch) {
              const keys = await keysRead(t.connection, page.query);
              expect(keys).toBeGreaterThan(0);
              if (countedInPage) {
                // the page and its capped count in one pass over the reference's or token's
                // matches, in index order (no SORT): it reads them up to the cap + 1, as the count would
                expect(total).toBeGreaterThan(PAGE);
                expect(keys).toBeGreaterThan(PAGE + 1);
                expect(keys).toBeLessThanOrEqual(Math.min(total!, t.settings.searchTotalExactUpTo) + 1);
              } else {
                // read in order, each page query stops after its size (+1 that tells a next page exists)
                expect(keys).toBeLessThanOrEqual(PAGE + 1);
              }
            }
          }
          // the counts (the total; on 0.108 those that find the newest window) read that index too
          const counts = reports.filter(
            (r) =>
              r.query.collection === 'resources' &&
              (r.query.command.pipeline as object[] | undefined)?.some(onlyCounts),
          );
          if (countedInPage) {
            // the page's one query counts its matches and holds the first ones beside the count
            expect(counts).toEqual([]);
            expect(JSON.stringify(pages[0].query.command.pipeline)).toContain('"$firstN"');
          } else if (search.includes('_total=none')) expect(counts).toEqual([]);
          else expect(counts.length).toBeGreaterThan(0);
          for (const count of counts) expect(count.indexes).toContain(index);
        }
      });
    }
  });

  /**
   * A patient's `$everything` page: the compartment's one entry (`*patient|Patient/x`) on the
   * references index, by type and newest first, the index's own order after it: read in order up
   * to the page (+ the row before it and the one after), no pass over the whole compartment.
   */
  /**
   * `_include`: the page's query brings its matches' `idx.ref` entries and the targets come with
   * their JSON (small enough for the page's budget): the page and one read of the targets, no read
   * of the matches' references or of the targets' JSON after them.
   */
  it('an _include page is two commands: the page with its references, the targets with their JSON', async () => {
    for (const credential of ['user', 'client'] as const) {
      const path = `/r4/Encounter?patient=Patient/${fixture.record.patientId}&_include=Encounter:patient&_count=5`;
      let body: { entry: Array<{ search: { mode: string } }> } | undefined;
      const reports = await plansOf(async () => {
        body = (await getOk(path, credentialHeaders(fixture, credential))()).body as typeof body;
      });
      expect(body!.entry.filter((entry) => entry.search.mode === 'include')).toHaveLength(1);
      const resources = reports.filter(({ query }) => query.collection === 'resources');
      expect(resources).toHaveLength(2);
      expect(resources[0].indexes).toContain('search_references');
      // held beside the count (`$idx.ref`), or projected by a plain page (its first pages held every match)
      expect(JSON.stringify(resources[0].query.command.pipeline)).toMatch(/"\$idx\.ref"|"idx\.ref":1/);
      expect(resources[1].indexes).toContain('_id_');
      expect(JSON.stringify(resources[1].query.command.pipeline)).toContain('"$json"');
    }
  });

  /**
   * One reference's search counts in its page's query until its first pages are seen to hold all
   * their matches (search/first-page-fits.ts): then the page alone tells the total, one plain page
   * query. A shape whose first pages overflow keeps counting in the page.
   */
  it("a patient's search whose first pages held every match becomes one plain page query", async () => {
    const patient = `patient=Patient/${fixture.record.patientId}`;
    const shapes = async (path: string) => {
      const seen: Array<{ total?: number; counted: boolean; queries: number }> = [];
      for (let i = 0; i < 2; i++) {
        let total: number | undefined;
        const reports = await plansOf(async () => {
          total = ((await getOk(path, credentialHeaders(fixture, 'user'))()).body as { total?: number })
            .total;
        });
        const resources = reports.filter(({ query }) => query.collection === 'resources');
        const pipeline = JSON.stringify(resources[0].query.command.pipeline);
        seen.push({ total, counted: pipeline.includes('"$firstN"'), queries: resources.length });
      }
      return seen;
    };
    const [first, second] = await shapes(`/r4/Observation?${patient}&_count=100`);
    expect(first.total).toBeGreaterThan(1);
    expect(first.total).toBeLessThanOrEqual(100);
    expect(first.counted).toBe(true);
    expect(second).toEqual({ total: first.total, counted: false, queries: 1 });
    // one match a page: the first page never holds them all, the page keeps its count
    const overflowing = await shapes(`/r4/Observation?${patient}&_count=1`);
    expect(overflowing).toEqual([
      { total: first.total, counted: true, queries: 1 },
      { total: first.total, counted: true, queries: 1 },
    ]);
  });

  it("a patient's $everything page reads its compartment in index order and stops after the page", async () => {
    const sortsEveryMatch = process.env.TEST_DB_ORDERED_INDEXES === 'no';
    const PAGE = 5;
    for (const credential of ['user', 'client'] as const) {
      const path = `/r4/Patient/${fixture.record.patientId}/$everything?_count=${PAGE}`;
      let body: { total?: number; entry: unknown[] } | undefined;
      const reports = await plansOf(async () => {
        body = (await getOk(path, credentialHeaders(fixture, credential))()).body as typeof body;
      });
      expect(body!.entry).toHaveLength(PAGE);
      expect(body!.total).toBeUndefined();
      const resources = reports.filter(({ query }) => query.collection === 'resources');
      // the compartment's page, and the Patient by key
      expect(resources).toHaveLength(2);
      const [page] = resources.filter((report) => report.indexes.includes('search_references'));
      expect(JSON.stringify(page.query.command)).toContain('*patient|Patient/');
      expect(sortsInMemory(page)).toBe(sortsEveryMatch);
      if (!sortsEveryMatch) expect(await keysRead(t.connection, page.query)).toBeLessThanOrEqual(PAGE + 2);
      // no count or reference pass over the compartment
      for (const report of resources)
        expect(JSON.stringify(report.query.command.pipeline ?? [])).not.toContain('$group');
    }
  });

  /**
   * Every Patient's `$everything` (type level), by type then id: a user's first page walks the
   * user's key-order index `{v, c, u, t, _id}` in order and stops after the page; a client's reads
   * its key space on the primary key in key order and stops after the page too. Neither runs the
   * pass over every compartment before the last page, nor sorts.
   */
  it('the type-level $everything page: read in key order, no sort, no pass over the compartments', async () => {
    const sortsEveryMatch = process.env.TEST_DB_ORDERED_INDEXES === 'no';
    const PAGE = 5;
    for (const [credential, index] of [
      ['user', 'user_type'],
      ['client', '_id_'],
    ] as const) {
      let body: { total?: number; entry: unknown[] } | undefined;
      const reports = await plansOf(async () => {
        body = (
          await getOk(`/r4/Patient/$everything?_count=${PAGE}`, credentialHeaders(fixture, credential))()
        ).body as typeof body;
      });
      expect(body!.entry).toHaveLength(PAGE);
      expect(body!.total).toBeUndefined();
      const resources = reports.filter(({ query }) => query.collection === 'resources');
      expect(resources.length).toBeGreaterThan(0);
      let keys = 0;
      for (const report of resources) {
        expect(JSON.stringify(report.query.command.pipeline ?? [])).not.toContain('$group');
        expect(report.indexes).toContain(index);
        expect(sortsInMemory(report)).toBe(sortsEveryMatch);
        if (!sortsEveryMatch) keys += await keysRead(t.connection, report.query);
      }
      // the first types (AllergyIntolerance, CarePlan …) are all in the compartment
      if (!sortsEveryMatch) expect(keys).toBeLessThanOrEqual(PAGE + resources.length);
    }
  });

  /**
   * A `_type` list in lastUpdated order: one ordered scan per type on the lastUpdated index, merged
   * in the app (resource.repository.ts `mergedPage`): `t: {$in}` on the index prefix would sort every
   * match even where the engine walks one type's index in order.
   */
  it('_type list, newest first: one page query per type on the lastUpdated index, each read in order', async () => {
    const sortsEveryMatch = process.env.TEST_DB_ORDERED_INDEXES === 'no';
    const PAGE = 5;
    const types = ['Observation', 'Encounter', 'Patient'];
    for (const [credential, index] of [
      ['user', 'user_type_lastUpdated'],
      ['client', 'type_lastUpdated'],
    ] as const) {
      const reports = await plansOf(
        getOk(`/r4?_type=${types.join(',')}&_count=${PAGE}`, credentialHeaders(fixture, credential)),
      );
      const pages = reports.filter(
        ({ query }) =>
          query.collection === 'resources' &&
          Array.isArray(query.command.pipeline) &&
          (query.command.pipeline as object[]).some((stage) => '$sort' in stage),
      );
      expect(pages.length).toBe(types.length);
      for (const page of pages) {
        expect(page.indexes).toContain(index);
        expect(sortsInMemory(page)).toBe(sortsEveryMatch);
        if (!sortsEveryMatch) {
          const keys = await keysRead(t.connection, page.query);
          expect(keys).toBeGreaterThan(0);
          expect(keys).toBeLessThanOrEqual(PAGE + 1);
        }
      }
    }
  });

  /**
   * `_revinclude` names the references index: unnamed, in `_id` order, the planner read the source
   * type's key index and tested every resource of that type (a user's thousands of Provenances for
   * one Patient's few) where the references index reads the entries that point at the page.
   */
  it('_revinclude=Provenance:target reads the references index, about a key per match', async () => {
    const sortsEveryMatch = process.env.TEST_DB_ORDERED_INDEXES === 'no';
    for (const credential of ['user', 'client'] as const) {
      const headers = credentialHeaders(fixture, credential);
      const path = `/r4/Patient?_id=${record.patientId}&_revinclude=Provenance:target`;
      let included = 0;
      const reports = await plansOf(async () => {
        const res = await getOk(path, headers)();
        included = (res.body.entry as Array<{ search: { mode: string } }>).filter(
          (entry) => entry.search.mode === 'include',
        ).length;
      });
      expect(included).toBeGreaterThan(0);
      const revinclude = reports.filter(
        ({ query }) =>
          query.collection === 'resources' && JSON.stringify(query.command).includes('"t":"Provenance"'),
      );
      expect(revinclude).toHaveLength(1);
      expect(revinclude[0].indexes).toContain('search_references');
      if (!sortsEveryMatch) {
        const keys = await keysRead(t.connection, revinclude[0].query);
        expect(keys).toBeGreaterThanOrEqual(included);
        expect(keys).toBeLessThanOrEqual(included + 2);
      }
    }
  });

  /**
   * History pages name their index, which holds the page's order (instance: `vid`; type and system:
   * `lu` then `_id`, newest first): read in order where the engine can, the page stops after its rows.
   */
  describe('history pages: their index, read in order where the engine can', () => {
    const sortsEveryMatch = process.env.TEST_DB_ORDERED_INDEXES === 'no';
    const PAGE = 5;
    const cases: Array<[string, (f: HotPathFixture) => string, { user: string; client: string }]> = [
      [
        'instance history',
        (f) => `/r4/Patient/${f.record.patientId}/_history?_count=${PAGE}`,
        { user: 'resource_versions', client: 'resource_versions' },
      ],
      [
        'type history',
        () => `/r4/Observation/_history?_count=${PAGE}`,
        { user: 'user_type_history_ordered', client: 'type_history_ordered' },
      ],
      [
        'type history since an instant',
        () => `/r4/Observation/_history?_since=2020-01-01T00:00:00Z&_count=${PAGE}`,
        { user: 'user_type_history_ordered', client: 'type_history_ordered' },
      ],
      [
        'system history',
        () => `/r4/_history?_count=${PAGE}`,
        { user: 'user_system_history_ordered', client: 'system_history_ordered' },
      ],
    ];
    for (const [name, path, indexes] of cases) {
      it(name, async () => {
        for (const credential of ['user', 'client'] as const) {
          const reports = await plansOf(getOk(path(fixture), credentialHeaders(fixture, credential)));
          const pages = reports.filter(
            ({ query }) =>
              query.collection === 'resource_history' &&
              Array.isArray(query.command.pipeline) &&
              (query.command.pipeline as object[]).some((stage) => '$sort' in stage),
          );
          expect(pages.length).toBe(1);
          expect(pages[0].indexes).toContain(indexes[credential]);
          if (!sortsEveryMatch) {
            expect(sortsInMemory(pages[0])).toBe(false);
            const keys = await keysRead(t.connection, pages[0].query);
            expect(keys).toBeGreaterThan(0);
            expect(keys).toBeLessThanOrEqual(PAGE + 1);
          }
        }
      });
    }
  });

  describe("purge's history look-ups: no index of their own, each served by one every write keeps", () => {
    const orderedReads = process.env.TEST_DB_ORDERED_INDEXES !== 'no';
    let ctx: TenantContext;
    let keys: string[];

    beforeAll(async () => {
      const bob = await createUser(t, client);
      const auth = bearer(bob.access_token);
      keys = [];
      for (const id of ['purge-plan-1', 'purge-plan-2', 'purge-plan-3']) {
        const body = { resourceType: 'Basic', id, code: { text: 'x' } };
        await request(t.server).put(`/r4/Basic/${id}`).set(auth).send(body).expect(201);
        await request(t.server).put(`/r4/Basic/${id}`).set(auth).send(body).expect(200);
        keys.push(`r4|${client.client_id}|Basic|${id}`);
      }
      ctx = {
        clientId: client.client_id,
        userId: bob.service_user_id,
        scopes: ['user/*.*'],
        form: 'user-token',
      };
    });

    /** The one query `run` sent to the history, an index scan, servable by `index` (hinted). */
    async function historyQueryServedBy(run: () => Promise<unknown>, index: string): Promise<PlanReport> {
      const queries = await recordQueries(t.connection, run);
      const reports: PlanReport[] = [];
      // the id claims released beside the rows: a range of `_id`, which the planner may scan
      // whole while the test's claims table is tiny; that the primary key serves it is what counts
      for (const query of queries) {
        reports.push(
          await explainQuery(t.connection, query, query.collection === 'resource_ids' ? '_id_' : undefined),
        );
      }
      expect(scanViolations(reports)).toEqual([]);
      const history = reports.filter((report) => report.query.collection === 'resource_history');
      expect(history).toHaveLength(1);
      const hinted = await explainQuery(t.connection, history[0].query, index);
      expect(scanViolations([hinted])).toEqual([]);
      expect(hinted.indexes).toContain(index);
      return hinted;
    }

    it('every version of named resources, and of a key slice: resource_versions (rk first)', async () => {
      const purge = t.app.get(PurgeRepository);
      await historyQueryServedBy(() => purge.historyRowsOf(ctx, 'r4', keys), 'resource_versions');
      const range = { from: keys[0], to: `${keys[1]}|` };
      await historyQueryServedBy(
        () => purge.removeHistoryInRange(ctx, 'r4', range, [keys[1]]),
        'resource_versions',
      );
      await historyQueryServedBy(
        () => purge.removeHistoryOf(ctx, 'r4', [{ key: keys[2] }]),
        'resource_versions',
      );
    });

    it("the sweep for leftovers: the user's rows newest first on the user's page indexes, read in order", async () => {
      const purge = t.app.get(PurgeRepository);
      for (const [type, index] of [
        [null, 'user_system_history_ordered'],
        ['Basic', 'user_type_history_ordered'],
      ] as const) {
        const page = await historyQueryServedBy(
          () => purge.historyRowsOlderThan(ctx, 'r4', type, new Date(Date.now() + 60_000), 2),
          index,
        );
        if (orderedReads) {
          expect(sortsInMemory(page)).toBe(false);
          const keysOfPage = await keysRead(t.connection, {
            ...page.query,
            command: { ...page.query.command, hint: index },
          });
          expect(keysOfPage).toBeLessThanOrEqual(3);
        }
        await historyQueryServedBy(() => purge.historyRowsAt(ctx, 'r4', type, new Date(0)), index);
      }
    });
  });

  it("a user's _lastUpdated range can run on the user's own index", async () => {
    const reports = await plansOf(getOk('/r4/Observation?_lastUpdated=ge2020-01-01', userAuth()));
    await expectServedBy(reports, 'user_type_lastUpdated');
  });

  describe('export plan, directory, identity', () => {
    it('export plan: prefixes larger than a file (finer count, key runs) and compartments', async () => {
      for (const id of ['same-prefix-1', 'same-prefix-2', 'same-prefix-3']) {
        await request(t.server)
          .put(`/r4/Basic/${id}`)
          .set(userAuth())
          .set('Content-Type', FHIR_JSON)
          .send(JSON.stringify({ resourceType: 'Basic', id, code: { text: 'plan' } }))
          .expect(201);
      }
      const planner = t.app.get(ExportPlanner);
      const ctx: TenantContext = {
        clientId: client.client_id,
        userId: alice.service_user_id,
        scopes: [],
        form: 'user-token',
      };
      const scope: ExportScope = {
        v: 'r4',
        kind: 'system',
        groupId: null,
        types: ['Basic', 'Observation'],
        since: null,
        transactionTime: new Date(),
      };
      // one resource per file: "sa" and "same" hold three each, so their keys are read in order
      const reports = await plansOf(() => planner.plan(ctx, scope, 1));
      expect(reports.some((report) => report.query.command.find !== undefined)).toBe(true);
      await plansOf(() =>
        planner.plan(ctx, { ...scope, kind: 'patient', types: null, patients: [record.patientId] }, 50),
      );
    });

    it('export files stream in key order: the key-order index, no SORT where the engine reads indexes in order', async () => {
      const sortsEveryMatch = process.env.TEST_DB_ORDERED_INDEXES === 'no';
      const exportPath = HOT_PATHS.find((path) => path.name === 'export manifest and a file')!;
      for (const [credential, index] of [
        ['user', 'user_type'],
        ['client', '_id_'],
      ] as const) {
        const reports = await plansOf(() => exportPath.run(fixture, credentialHeaders(fixture, credential)));
        // the file's cursor: the stored JSON of a key range, in key order (the driver sends the sort as a Map)
        const files = reports.filter(
          ({ query }) =>
            query.collection === 'resources' &&
            query.command.find !== undefined &&
            JSON.stringify(query.command.projection) === '{"_id":0,"json":1}',
        );
        expect(files.length).toBeGreaterThan(0);
        for (const file of files) {
          expect(file.indexes).toContain(index);
          if (!sortsEveryMatch) expect(sortsInMemory(file)).toBe(false);
        }
      }
    });

    it('directory search (filter and sort_name order; the version read and the copy rebuild)', async () => {
      await t.app.get(DirectoryService).importRecords(
        ['Boston General Hospital', 'Boston Children Clinic', 'Worcester Care'].map((name, i) => ({
          line: i + 1,
          record: {
            id: `dir-${i}`,
            name,
            system_type: 'HealthSystem',
            address: { line: [], city: 'Boston', state: 'MA', postalCode: null },
            ehr: null,
            fhir_base_url: null,
            logo: null,
            status: 'active',
          },
        })),
      );
      await plansOf(async () => {
        // the first search after a write runs in the database and starts the in-memory copy's rebuild
        const res = await request(t.server).post('/api/search').query({ query: 'bos' }).set(userAuth());
        expect(res.body.results.length).toBeGreaterThan(0);
        await t.app.get(DirectoryService).warmSearchCopy();
      });
    });

    it('grants: auth code, refresh token, family; users by app_user_id', async () => {
      const creds = { client_id: client.client_id, client_secret: client.client_secret };
      let refreshToken = '';
      await plansOf(async () => {
        const code = (
          await request(t.server)
            .post('/user-management/v1/user/auth-code')
            .send({ app_user_id: alice.app_user_id, ...creds })
            .expect(200)
        ).body.code as string;
        refreshToken = (
          await request(t.server)
            .post('/oauth2/token')
            .type('form')
            .send({ grant_type: 'authorization_code', code, ...creds })
            .expect(200)
        ).body.refresh_token as string;
      });
      await plansOf(async () => {
        await request(t.server)
          .post('/oauth2/token')
          .type('form')
          .send({ grant_type: 'refresh_token', refresh_token: refreshToken, ...creds })
          .expect(200);
        // Re-use revokes the family.
        await request(t.server)
          .post('/oauth2/token')
          .type('form')
          .send({ grant_type: 'refresh_token', refresh_token: refreshToken, ...creds })
          .expect(400);
      });
      // Creating a user looks the app_user_id up in the client first (an existing one is answered).
      await plansOf(async () =>
        request(t.server)
          .post('/user-management/v1/user')
          .send({ app_user_id: alice.app_user_id, ...creds })
          .expect(200),
      );
    });
  });
});
