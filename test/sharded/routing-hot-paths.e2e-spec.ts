import { createTestApp, IDENTITY_TEST_ENV, type TestApp } from '@app/testing';
import { explainQuery, recordQueries, scanViolations, type RecordedQuery } from '@app/testing/query-plans';
import { describeRoute, routeQuery, type RouteReport } from '@app/testing/query-routing';
import { SHARDED_COLLECTIONS } from '../../src/storage/shard-keys';
import { StoreCheckService } from '../../src/modules/fhir-store/store-check.service';
import { credentialHeaders, HOT_PATHS, seedHotPaths, type HotPathFixture } from '../query-plans.catalogue';

/**
 * Routing on a sharded cluster (`npm run test:sharded`: each test database sharded as `store shard`
 * does, docs/scaling.md): every hot path of the query-plan catalogue
 * (test/query-plans.catalogue.ts) served through the real app with command monitoring on, and each
 * query it sent to a sharded collection explained for its route (test/support/query-routing.ts:
 * the router's explain, and Citus' `Task Count` on the coordinator of DocumentDB distributed).
 *
 * - With one user's credential every query goes to exactly one shard: the shard key (client, user)
 *   is in the filter.
 * - With the client's own credential (a client-wide program token: every user of the client) and for
 *   operator scans the queries fan out: to at most every shard, and each shard's part reads an index
 *   (the single node's plans are checked by query-plans.e2e-spec.ts), never a whole shard table.
 */

/** Every sharded collection (by owner; the claim collections by `_id`): their queries are checked. */
const ROUTED = SHARDED_COLLECTIONS.map((collection) => collection.name);

/**
 * User-scoped queries that still fan out, each with its reason. The suite fails when another one
 * appears, and also when a listed one is no longer sent (then it leaves this list).
 */
const KNOWN_USER_FAN_OUT: ReadonlyArray<{ why: string; matches: (query: RecordedQuery) => boolean }> = [
  {
    why: 'a batch of id claims (resource-ids.repository.ts, docs/scaling.md "Uniqueness"): `resource_ids` is sharded on `_id` so that an id is unique across the cluster, so the look-up of a bundle\'s already-claimed keys and the release of a removal\'s claims reach the shards of those keys',
    matches: ({ collection }) => collection === 'resource_ids',
  },
];

describe('routing on a sharded cluster: one shard for every query of one user (e2e)', () => {
  jest.setTimeout(120_000);
  let t: TestApp;
  let fixture: HotPathFixture;
  let allShards: number;
  const knownSeen = new Set<number>();

  beforeAll(async () => {
    // METRICS_ENABLED turns the driver's command monitoring on (the recorder listens to it).
    t = await createTestApp({ ...IDENTITY_TEST_ENV, DIRECTORY_SEED: 'false', METRICS_ENABLED: 'true' });
    fixture = await seedHotPaths(t);
    // A query without any shard-key field: the bound of every fan-out.
    const everything = await routeQuery(t.connection, {
      collection: 'resources',
      command: { find: 'resources', filter: {} },
      summary: 'find resources {}',
    });
    allShards = everything.shards!;
  }, 300_000);
  afterAll(async () => t?.close());

  it('the resource collections are sharded (a query without the shard key reaches several shards)', () => {
    expect(allShards).toBeGreaterThan(1);
  });

  /** Routes of the queries `run` sent to the sharded collections (one after another: a psql each). */
  async function routesOf(run: () => Promise<unknown>): Promise<RouteReport[]> {
    const queries = (await recordQueries(t.connection, run)).filter((q) => ROUTED.includes(q.collection));
    const reports: RouteReport[] = [];
    for (const query of queries) reports.push(await routeQuery(t.connection, query));
    expect(reports.length).toBeGreaterThan(0);
    expect(reports.filter((r) => r.shards === null).map(describeRoute)).toEqual([]);
    return reports;
  }

  function unexpectedFanOut(reports: readonly RouteReport[]): string[] {
    return reports
      .filter((report) => report.shards !== 1)
      .filter((report) => {
        const known = KNOWN_USER_FAN_OUT.findIndex((entry) => entry.matches(report.query));
        if (known >= 0) knownSeen.add(known);
        return known < 0;
      })
      .map(describeRoute);
  }

  async function expectBoundedFanOut(reports: readonly RouteReport[]): Promise<void> {
    expect(reports.filter((r) => r.shards! > allShards).map(describeRoute)).toEqual([]);
    // The coordinator's plan where there is one (the gateway cannot explain every distributed plan).
    const plans = [];
    for (const report of reports)
      if (report.coordinator === null) plans.push(await explainQuery(t.connection, report.query));
    expect(scanViolations(plans)).toEqual([]);
    expect(reports.filter((r) => r.seqScan).map(describeRoute)).toEqual([]);
  }

  for (const group of new Set(HOT_PATHS.map((path) => path.group))) {
    describe(group, () => {
      for (const path of HOT_PATHS.filter((p) => p.group === group)) {
        if (path.credentials.includes('user')) {
          it(`${path.name}: one user → one shard`, async () => {
            const reports = await routesOf(() => path.run(fixture, credentialHeaders(fixture, 'user')));
            expect(unexpectedFanOut(reports)).toEqual([]);
          });
        }
        if (path.credentials.includes('client')) {
          it(`${path.name}: the whole client → at most every shard, on indexes`, async () => {
            await expectBoundedFanOut(
              await routesOf(() => path.run(fixture, credentialHeaders(fixture, 'client'))),
            );
          });
        }
      }
    });
  }

  it('operator scans (store check) go to every shard', async () => {
    const reports = await routesOf(() => t.app.get(StoreCheckService).check(false));
    expect(reports.some((r) => r.shards === allShards)).toBe(true);
    expect(reports.filter((r) => r.shards! > allShards).map(describeRoute)).toEqual([]);
  });

  // Last (jest runs a file's tests in order): every listed fan-out was met by a hot path above.
  it('every known user-scoped fan-out still happens (else it leaves the list)', () => {
    const gone = KNOWN_USER_FAN_OUT.filter((_, index) => !knownSeen.has(index)).map((entry) => entry.why);
    expect(gone).toEqual([]);
  });
});
