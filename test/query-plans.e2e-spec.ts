import request from 'supertest';
import {
  bearer,
  clientHeaders,
  createClient,
  createTestApp,
  createUser,
  IDENTITY_TEST_ENV,
  TestApp,
  TestClient,
  TestUser,
} from '@app/testing';
import {
  explainQuery,
  recordQueries,
  scanViolations,
  sortsInMemory,
  type PlanReport,
} from '@app/testing/query-plans';
import { loadSyntheaPatients, resourcesOfType, type SyntheaRecord } from '@app/testing/synthea';
import { DirectoryService } from '../src/modules/directory/directory.service';
import { ExportPlanner, type ExportScope } from '../src/modules/bulk-export/export-planner';
import type { TenantContext } from '../src/tenancy/tenant-context';
import { documentDbPaths, hasOrderedIndexes } from '../src/database/documentdb-process';

/**
 * Every hot query is an equality/range match on indexed fields with the client key in
 * the filter, proven with `explain`. Each case serves a real request through the app with command
 * monitoring on, then explains every query command the repositories sent (libs/testing/src/
 * query-plans.ts): none may be a collection scan, each must read an index. The queries are the
 * code's own, so this breaks when a repository or the search lib drifts.
 */
describe('query plans: index scans for every hot query (e2e)', () => {
  jest.setTimeout(60_000);
  let t: TestApp;
  let client: TestClient;
  let alice: TestUser;
  let record: SyntheaRecord;
  const FHIR_JSON = 'application/fhir+json';

  beforeAll(async () => {
    // METRICS_ENABLED turns the driver's command monitoring on (the recorder listens to it).
    t = await createTestApp({ ...IDENTITY_TEST_ENV, DIRECTORY_SEED: 'false', METRICS_ENABLED: 'true' });
    client = await createClient(t);
    alice = await createUser(t, client);
    [record] = await loadSyntheaPatients(t, bearer(alice.access_token), { count: 1 });
    const extras = [
      {
        resourceType: 'RiskAssessment',
        id: 'risk-1',
        status: 'final',
        subject: { reference: `Patient/${record.patientId}` },
        prediction: [{ probabilityDecimal: 0.25 }],
      },
      {
        resourceType: 'ValueSet',
        id: 'vs-1',
        status: 'active',
        url: 'http://example.org/fhir/ValueSet/vs-1',
      },
    ];
    for (const resource of extras) {
      await request(t.server)
        .put(`/r4/${resource.resourceType}/${resource.id}`)
        .set(bearer(alice.access_token))
        .set('Content-Type', FHIR_JSON)
        .send(JSON.stringify(resource))
        .expect(201);
    }
  }, 180_000);
  afterAll(async () => t?.close());

  const userAuth = () => bearer(alice.access_token);
  const clientAuth = () => clientHeaders(client, 'client');

  /** Explains every query `run` made; fails on any collection scan. Returns the reports. */
  async function plansOf(run: () => Promise<unknown>): Promise<PlanReport[]> {
    const queries = await recordQueries(t.connection, run);
    const reports = await Promise.all(queries.map((query) => explainQuery(t.connection, query)));
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

  describe('reads and history', () => {
    it('read by id (user and client-wide)', async () => {
      await plansOf(getOk(`/r4/Patient/${record.patientId}`, userAuth()));
      await plansOf(getOk(`/r4/Patient/${record.patientId}`, clientAuth()));
    });

    it('version read and the history page', async () => {
      await plansOf(getOk(`/r4/Patient/${record.patientId}/_history/1`, userAuth()));
      await plansOf(getOk(`/r4/Patient/${record.patientId}/_history`, userAuth()));
    });
  });

  describe('search parameters, user and client-wide', () => {
    const observation = () => resourcesOfType([record], 'Observation')[0];
    const cases: Array<[string, () => string, string?]> = [
      [
        'token',
        () =>
          `Observation?code=${encodeURIComponent(`http://loinc.org|${observation().code.coding[0].code}`)}`,
      ],
      [
        'string',
        () => `Patient?name=${encodeURIComponent((record.resources[0] as any).name[0].family.slice(0, 3))}`,
      ],
      ['reference', () => `Observation?patient=Patient/${record.patientId}`],
      ['date', () => `Observation?date=ge2015-01-01&date=lt2030`, 'search_range_buckets'],
      ['number', () => 'RiskAssessment?probability=gt0.2', 'search_range_buckets'],
      ['quantity', () => 'Observation?value-quantity=gt5', 'search_range_buckets'],
      ['uri', () => 'ValueSet?url=http://example.org/fhir/ValueSet/vs-1'],
      ['_id', () => `Patient?_id=${record.patientId}`],
      ['_lastUpdated', () => 'Observation?_lastUpdated=ge2020-01-01'],
      ['sort by _lastUpdated', () => 'Observation?_sort=-_lastUpdated&_count=5'],
      ['sort by a parameter', () => `Observation?patient=Patient/${record.patientId}&_sort=date&_count=5`],
      // on the reference index, the date tested on the candidates without its range buckets
      [
        'reference and date range',
        () => `Observation?patient=Patient/${record.patientId}&date=ge2015&date=lt2030`,
        'search_ref',
      ],
    ];
    for (const [name, path, index] of cases) {
      it(`${name}`, async () => {
        for (const auth of [userAuth(), clientAuth()]) {
          const reports = await plansOf(getOk(`/r4/${path()}`, auth));
          if (index) await expectServedBy(reports, index);
        }
      });
    }
  });

  /**
   * A page of a sorted search reads its index in sort order and stops after the page, no `SORT`
   * stage above the scan: MongoDB always; DocumentDB when its kit has the RUM fork
   * (pg_documentdb_extended_rum, docs/storage.md "Sorted pages"), else it sorts every match.
   */
  describe('sorted pages: the index in sort order, stopping after the page', () => {
    const walksInOrder = async () =>
      process.env.TEST_DB_ENGINE !== 'documentdb' || (await hasOrderedIndexes(documentDbPaths(process.env)));
    const pageQueries = (reports: PlanReport[]) =>
      reports.filter(
        ({ query }) =>
          query.collection === 'resources' &&
          Array.isArray(query.command.pipeline) &&
          (query.command.pipeline as object[]).some((stage) => '$sort' in stage),
      );
    const cases: Array<[string, string]> = [
      ['_lastUpdated range', 'Observation?_lastUpdated=ge2020-01-01'],
      ['_sort=-_lastUpdated', 'Observation?_sort=-_lastUpdated&_count=5'],
      ['plain type search (default order, newest first)', 'Observation?_count=5'],
    ];
    for (const [name, path] of cases) {
      it(name, async () => {
        const ordered = await walksInOrder();
        for (const auth of [userAuth(), clientAuth()]) {
          const pages = pageQueries(await plansOf(getOk(`/r4/${path}`, auth)));
          expect(pages.length).toBe(1);
          expect(sortsInMemory(pages[0])).toBe(!ordered);
        }
      });
    }
  });

  it("a user's _lastUpdated range can run on the user's own index", async () => {
    const reports = await plansOf(getOk('/r4/Observation?_lastUpdated=ge2020-01-01', userAuth()));
    await expectServedBy(reports, 'user_type_lastUpdated');
  });

  describe('includes, chains, $everything', () => {
    it('_include and _revinclude', async () => {
      await plansOf(
        getOk(`/r4/Observation?patient=Patient/${record.patientId}&_include=Observation:patient`, userAuth()),
      );
      await plansOf(getOk(`/r4/Patient?_id=${record.patientId}&_revinclude=Observation:patient`, userAuth()));
    });

    it('chain and _has', async () => {
      const family = (record.resources[0] as any).name[0].family as string;
      await plansOf(getOk(`/r4/Observation?patient.family=${encodeURIComponent(family)}`, userAuth()));
      await plansOf(getOk(`/r4/Patient?_has:Observation:patient:status=final`, userAuth()));
    });

    it('$everything', async () => {
      await plansOf(getOk(`/r4/Patient/${record.patientId}/$everything`, userAuth()));
      await plansOf(getOk(`/r4/Patient/${record.patientId}/$everything`, clientAuth()));
    });
  });

  describe('bulk export, purge, directory, identity', () => {
    it('export manifest (types, counts, file boundaries) and a file', async () => {
      let manifest: any;
      await plansOf(async () => {
        manifest = (await getOk('/bulk-data/r4/$export', userAuth())()).body;
      });
      const file = new URL(manifest.output[0].url);
      await plansOf(getOk(file.pathname + file.search, userAuth()));
    });

    it('export manifest client-wide (the prefix count in two halves) and a file', async () => {
      let manifest: any;
      await plansOf(async () => {
        manifest = (await getOk('/bulk-data/r4/$export', clientAuth())()).body;
      });
      const file = new URL(manifest.output[manifest.output.length - 1].url);
      await plansOf(getOk(file.pathname + file.search, clientAuth()));
    });

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

    it('purge batches', async () => {
      const bob = await createUser(t, client);
      await request(t.server)
        .post('/r4/Observation')
        .set(bearer(bob.access_token))
        .set('Content-Type', FHIR_JSON)
        .send(JSON.stringify({ resourceType: 'Observation', status: 'final', code: { text: 'doomed' } }))
        .expect(201);
      await plansOf(async () => {
        await request(t.server).delete('/r4/purge').set(bearer(bob.access_token)).expect(200);
        // The purge goes on after the answer: wait until the user's resources are gone.
        for (let i = 0; i < 50; i++) {
          const left = await t.connection
            .db!.collection('resources')
            .countDocuments({ c: client.client_id, u: bob.service_user_id });
          if (left === 0) break;
          await new Promise((resolve) => setTimeout(resolve, 100));
        }
      });
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
