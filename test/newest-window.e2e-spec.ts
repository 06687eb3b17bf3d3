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
import { recordQueries, type RecordedQuery } from '@app/testing/query-plans';
import { ResourceStorage } from '../src/storage/resource-storage';

/**
 * Pages in lastUpdated order (plain type searches, `_lastUpdated` ranges) on an engine that sorts
 * every match (DocumentDB 0.108: `npm run test:kit-0.108`) are read from the newest window of
 * lastUpdated that holds them (src/storage/search/newest-window.ts): the same pages as a sort of
 * everything, fewer rows read. An engine that reads the index in order (the default kit, MongoDB)
 * runs the page query alone: the windows would only add counts. The pages are the same on both.
 */
describe('newest-first pages from a window of lastUpdated (e2e)', () => {
  let t: TestApp;
  let client: TestClient;
  let alice: TestUser;
  const asAlice = () => bearer(alice.access_token);
  const get = (path: string, headers = asAlice()) => request(t.server).get(path).set(headers);
  const relative = (url: string) => url.slice(t.settings.urls.base.length);
  const OBSERVATIONS = 60;
  /** What global-setup knows of the kit it started (an engine that walks composite indexes in order). */
  const orderedKit = process.env.TEST_DB_ORDERED_INDEXES === 'yes';

  const observation = (i: number) => ({
    resource: {
      resourceType: 'Observation',
      id: `w${String(i).padStart(3, '0')}`,
      status: 'final',
      code: { coding: [{ system: 'http://loinc.org', code: '8302-2' }] },
      valueQuantity: { value: 150 + i, unit: 'cm', system: 'http://unitsofmeasure.org', code: 'cm' },
    },
    request: { method: 'PUT', url: `Observation/w${String(i).padStart(3, '0')}` },
  });

  beforeAll(async () => {
    // METRICS_ENABLED turns the driver's command monitoring on (the recorder listens to it).
    // A count starts beside a page query still running after SEARCH_COUNT_BESIDE_AFTER_MS (15 ms by
    // default: a loaded machine reaches it); here only the page decides whether a count is needed.
    t = await createTestApp({
      ...IDENTITY_TEST_ENV,
      DIRECTORY_SEED: 'false',
      METRICS_ENABLED: 'true',
      SEARCH_COUNT_BESIDE_AFTER_MS: '600000',
    });
    client = await createClient(t);
    alice = await createUser(t, client);
    // three bundles of 20: many matches within the same second or two
    for (let b = 0; b < OBSERVATIONS / 20; b++) {
      await request(t.server)
        .post('/r4')
        .set(asAlice())
        .set('Content-Type', 'application/fhir+json')
        .send({
          resourceType: 'Bundle',
          type: 'transaction',
          entry: Array.from({ length: 20 }, (_, i) => observation(b * 20 + i)),
        })
        .expect(200);
    }
  }, 120_000);
  afterAll(async () => t?.close());

  /** Every match by walking next links: [id, lastUpdated] in served order, and the commands sent. */
  async function walk(path: string, headers = asAlice()) {
    const seen: Array<[string, string]> = [];
    const commands: RecordedQuery[] = [];
    let url: string | undefined = path;
    while (url) {
      let body: any;
      commands.push(
        ...(await recordQueries(t.connection, async () => {
          body = (await get(url!, headers).expect(200)).body;
        })),
      );
      for (const entry of body.entry ?? [])
        if (entry.search?.mode === 'match') seen.push([entry.resource.id, entry.resource.meta.lastUpdated]);
      const next = body.link.find((l: any) => l.relation === 'next')?.url as string | undefined;
      url = next && relative(next);
    }
    return { seen, commands };
  }

  const newestFirst = (seen: Array<[string, string]>) =>
    [...seen].sort(([idA, luA], [idB, luB]) =>
      luA === luB ? (idA < idB ? -1 : idA > idB ? 1 : 0) : luA > luB ? -1 : 1,
    );

  /** The `lu` lower bounds of the page queries (aggregations with a `$sort`) the app sent. */
  const windowStarts = (commands: RecordedQuery[]) =>
    commands
      .filter(
        (q) =>
          q.collection === 'resources' &&
          (q.command.pipeline as object[] | undefined)?.some((s) => '$sort' in s),
      )
      .map(
        (q) =>
          JSON.stringify(q.command.filter ?? q.command.pipeline).match(/"lu":\{"\$gte":"([^"]+)"\}/)?.[1],
      );

  it("the start-up probe of the engine's index order answers for the kit the tests run on", () => {
    expect(t.app.get(ResourceStorage).readsIndexesInOrder).toBe(orderedKit);
  });

  it('a small page: the walk gives every match once, newest first then id; read from a window only where the engine sorts', async () => {
    const { seen, commands } = await walk('/r4/Observation?_count=5');
    expect(seen).toHaveLength(OBSERVATIONS);
    expect(new Set(seen.map(([id]) => id)).size).toBe(OBSERVATIONS);
    expect(seen).toEqual(newestFirst(seen));
    if (orderedKit) {
      // the page query alone, on the whole range
      expect(windowStarts(commands).every((start) => start === undefined)).toBe(true);
    } else {
      // the first page needs 6 matches: within the newest second of a bundle of 20 there are enough
      expect(windowStarts(commands)[0]).toBeDefined();
    }
  });

  it('a page larger than every match: the whole range, after one window count and one count up to the need where the engine sorts', async () => {
    const { seen, commands } = await walk('/r4/Observation?_count=100');
    expect(seen).toHaveLength(OBSERVATIONS);
    expect(seen).toEqual(newestFirst(seen));
    expect(windowStarts(commands)).toEqual([undefined]);
    const counts = commands.filter(
      (q) =>
        q.collection === 'resources' &&
        !(q.command.pipeline as object[] | undefined)?.some((s) => '$sort' in s),
    );
    // the page saw every match, so the total needs no count of its own
    if (orderedKit) expect(counts).toEqual([]);
    else expect(counts.length).toBeLessThanOrEqual(3);
  });

  it('a _lastUpdated range and a client credential: the same matches and order as the user walk', async () => {
    const all = (await walk('/r4/Observation?_count=100')).seen;
    const lus = all.map(([, lu]) => lu).sort();
    const from = lus[Math.floor(lus.length / 4)];
    const to = lus[Math.floor((lus.length * 3) / 4)];
    const expected = all.filter(([, lu]) => lu >= from && lu < to);
    expect(expected.length).toBeGreaterThan(5);
    const range = `/r4/Observation?_lastUpdated=ge${from}&_lastUpdated=lt${to}&_count=4`;
    expect((await walk(range)).seen).toEqual(expected);
    expect((await walk(range, clientHeaders(client, 'client'))).seen).toEqual(expected);
  });

  it('a deleted resource is neither served nor counted towards the window', async () => {
    const before = (await walk('/r4/Observation?_count=100')).seen;
    const [newestId] = before[0];
    await request(t.server).delete(`/r4/Observation/${newestId}`).set(asAlice()).expect(200);
    const { seen } = await walk('/r4/Observation?_count=3');
    expect(seen).toEqual(before.slice(1));
    const res = await get('/r4/Observation?_count=3').expect(200);
    expect(res.body.total).toBe(OBSERVATIONS - 1);
    expect(res.body.entry).toHaveLength(3);
  });
});
