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
import { entryIds, loadSyntheaPatients, resourcesOfType, type SyntheaRecord } from '@app/testing/synthea';
import { ReindexService } from '../src/modules/fhir-store/search/reindex.service';

/**
 * The searchset Bundle (docs/api.md §6), paging walked to the end, result parameters,
 * `_include`/`_revinclude`, POST `_search`, system search, tenant scope and the bad-input cases.
 */
describe('FHIR search results (e2e, Synthea R4)', () => {
  let t: TestApp;
  let client: TestClient;
  let alice: TestUser;
  let bob: TestUser;
  let mallory: TestUser;
  let records: SyntheaRecord[];
  const asAlice = () => bearer(alice.access_token);
  const get = (path: string, headers = asAlice()) => request(t.server).get(path).set(headers);
  const relative = (url: string) => url.slice(t.settings.urls.base.length);
  const link = (bundle: any, relation: string) =>
    bundle.link.find((l: any) => l.relation === relation)?.url as string | undefined;

  beforeAll(async () => {
    t = await createTestApp(IDENTITY_TEST_ENV);
    client = await createClient(t);
    const other = await createClient(t);
    [alice, bob, mallory] = await Promise.all([
      createUser(t, client),
      createUser(t, client),
      createUser(t, other),
    ]);
    records = await loadSyntheaPatients(t, asAlice(), { count: 2 });
    // The same records, same ids, in another client: must never show up in alice's searches.
    await loadSyntheaPatients(t, bearer(mallory.access_token), { count: 1 });
    await request(t.server)
      .put(`/r4/Patient/${records[0].patientId}`)
      .set(bearer(mallory.access_token))
      .set('Content-Type', 'application/fhir+json')
      .send({ ...records[0].resources[0], name: [{ family: 'Malloryson' }] })
      .expect(200);
    await request(t.server)
      .post('/r4/Patient')
      .set(bearer(bob.access_token))
      .set('Content-Type', 'application/fhir+json')
      .send({ resourceType: 'Patient', name: [{ family: 'Bobson' }], gender: 'male' })
      .expect(201);
  }, 120_000);
  afterAll(async () => t?.close());

  describe('searchset Bundle and paging', () => {
    it('has total, absolute links keeping the parameters, fullUrl and search.mode', async () => {
      const res = await get('/r4/Observation?code=8302-2&_count=2').expect(200);
      expect(res.headers['content-type']).toBe('application/fhir+json; charset=utf-8');
      const expected = resourcesOfType(records, 'Observation').filter(
        (o) => o.code.coding[0].code === '8302-2',
      );
      expect(res.body).toMatchObject({ resourceType: 'Bundle', type: 'searchset', total: expected.length });
      expect(res.body.entry).toHaveLength(2);
      for (const entry of res.body.entry) {
        expect(entry.fullUrl).toBe(`${t.settings.urls.base}/r4/Observation/${entry.resource.id}`);
        expect(entry.search.mode).toBe('match');
      }
      expect(link(res.body, 'self')).toBe(
        `${t.settings.urls.base}/r4/Observation?code=8302-2&_count=2&_skip=0`,
      );
      expect(link(res.body, 'next')).toBe(
        `${t.settings.urls.base}/r4/Observation?code=8302-2&_count=2&_skip=2`,
      );
      expect(link(res.body, 'previous')).toBeUndefined();
      expect(link(res.body, 'last')).toContain(`_skip=${Math.floor((expected.length - 1) / 2) * 2}`);
    });

    it('walking next links to the end returns every match exactly once (default sort)', async () => {
      const all = resourcesOfType(records, 'Observation');
      const seen: string[] = [];
      let url: string | undefined = '/r4/Observation?_count=7';
      let pages = 0;
      while (url) {
        const res: request.Response = await get(url).expect(200);
        seen.push(...entryIds(res.body));
        if (pages > 0) expect(link(res.body, 'previous')).toBeDefined();
        url = link(res.body, 'next') && relative(link(res.body, 'next')!);
        if (!url) expect(link(res.body, 'self')).toBe(link(res.body, 'last'));
        pages++;
      }
      expect(seen).toHaveLength(all.length);
      expect([...seen].sort()).toEqual(all.map((o) => o.id).sort());
      expect(pages).toBe(Math.ceil(all.length / 7));
    });

    it('the same with _sort=-date (ties broken by id)', async () => {
      const seen: string[] = [];
      let url: string | undefined = '/r4/Observation?_sort=-date&_count=9';
      while (url) {
        const res: request.Response = await get(url).expect(200);
        seen.push(...entryIds(res.body));
        url = link(res.body, 'next') && relative(link(res.body, 'next')!);
      }
      expect(new Set(seen).size).toBe(seen.length);
      expect(seen).toHaveLength(resourcesOfType(records, 'Observation').length);
    });

    // One reference's search: each page is one query that counts the matches and holds the page's
    // rows beside the count (`$firstN` in index order, `$topN` for a `_sort` parameter).
    it("one patient's Observations walked page by page, newest first and by _sort=-date", async () => {
      const patientId = records[0].patientId;
      const expected = resourcesOfType([records[0]], 'Observation');
      expect(expected.length).toBeGreaterThan(3 * 5);
      expect(expected.every((o) => typeof o.effectiveDateTime === 'string')).toBe(true);
      for (const sort of ['', '&_sort=-date,_id']) {
        const seen: Array<{ id: string; lastUpdated: string; date: string }> = [];
        let url: string | undefined = `/r4/Observation?patient=Patient/${patientId}${sort}&_count=5`;
        while (url) {
          const res: request.Response = await get(url).expect(200);
          expect(res.body.total).toBe(expected.length);
          expect(res.body.entry.length).toBeLessThanOrEqual(5);
          for (const { resource } of res.body.entry)
            seen.push({
              id: resource.id,
              lastUpdated: resource.meta.lastUpdated,
              date: resource.effectiveDateTime,
            });
          url = link(res.body, 'next') && relative(link(res.body, 'next')!);
        }
        expect(seen.map((o) => o.id).sort()).toEqual(expected.map((o) => o.id).sort());
        const key = sort ? (o: (typeof seen)[0]) => o.date : (o: (typeof seen)[0]) => o.lastUpdated;
        const keys = seen.map(key);
        expect(keys).toEqual([...keys].sort().reverse());
      }
    });

    /** Every match of `path` by walking its next links: [id, meta.lastUpdated] in served order. */
    async function walk(path: string, headers = asAlice()): Promise<Array<[string, string]>> {
      const seen: Array<[string, string]> = [];
      let url: string | undefined = path;
      while (url) {
        const res: request.Response = await get(url, headers).expect(200);
        for (const entry of res.body.entry ?? [])
          if (entry.search?.mode === 'match') seen.push([entry.resource.id, entry.resource.meta.lastUpdated]);
        url = link(res.body, 'next') && relative(link(res.body, 'next')!);
      }
      return seen;
    }

    /** The documented order without `_sort`: newest first, then id. */
    function inDefaultOrder(seen: Array<[string, string]>): Array<[string, string]> {
      return [...seen].sort(([idA, luA], [idB, luB]) =>
        luA === luB ? (idA < idB ? -1 : idA > idB ? 1 : 0) : luA > luB ? -1 : 1,
      );
    }

    it('pages walk the default order (newest first, then id), user and client-wide, each match once', async () => {
      const all = resourcesOfType(records, 'Observation');
      const walked = await walk('/r4/Observation?_count=7');
      expect(walked).toEqual(inDefaultOrder(walked));
      expect(walked.map(([id]) => id).sort()).toEqual(all.map((o) => o.id).sort());
      // a `_lastUpdated` range (the user's own index, or the client-wide one): the same order
      const lus = walked.map(([, lu]) => lu).sort();
      const from = lus[Math.floor(lus.length / 3)];
      const range = `/r4/Observation?_lastUpdated=ge${from}&_count=6`;
      const mine = await walk(range);
      expect(mine).toEqual(walked.filter(([, lu]) => lu >= from));
      const clientWide = await walk(range, clientHeaders(client, 'client'));
      expect(clientWide).toEqual(inDefaultOrder(clientWide));
      expect(clientWide.map(([id]) => id).sort()).toEqual(mine.map(([id]) => id).sort());
    });

    it('a patient date range served by the reference index: the exact matches, in order', async () => {
      const record = [...records].sort(
        (a, b) => resourcesOfType([b], 'Observation').length - resourcesOfType([a], 'Observation').length,
      )[0];
      const observations = resourcesOfType([record], 'Observation');
      // Synthea writes dateTimes at seconds precision: each covers [t, t + 999 ms] (search.html#date)
      expect(observations.every((o) => /T\d\d:\d\d:\d\d[+-]/.test(o.effectiveDateTime))).toBe(true);
      const times = observations.map((o) => Date.parse(o.effectiveDateTime)).sort((a, b) => a - b);
      const day = (time: number) => new Date(time).toISOString().slice(0, 10);
      const [from, to] = [
        day(times[Math.floor(times.length / 4)]),
        day(times[Math.floor((times.length * 3) / 4)]),
      ];
      const [lo, hi] = [Date.parse(`${from}T00:00:00Z`), Date.parse(`${to}T00:00:00Z`)];
      const expected = observations
        .filter((o) => Date.parse(o.effectiveDateTime) + 999 >= lo && Date.parse(o.effectiveDateTime) < hi)
        .map((o) => o.id)
        .sort();
      expect(expected.length).toBeGreaterThan(5);
      expect(expected.length).toBeLessThan(observations.length);
      const dates = `date=ge${from}&date=lt${to}`;
      const walked = await walk(`/r4/Observation?subject=Patient/${record.patientId}&${dates}&_count=5`);
      expect(walked).toEqual(inDefaultOrder(walked));
      expect(walked.map(([id]) => id).sort()).toEqual(expected);
      // the same dates without the patient run on the range buckets: the patient's part is the same
      const byDate = await walk(`/r4/Observation?${dates}&_count=100`);
      const ofPatient = new Set(expected);
      expect(byDate.filter(([id]) => ofPatient.has(id))).toEqual(walked);
    });

    it('_count defaults to 10, is clamped to 100; _total=none; _summary=count; _elements', async () => {
      const all = resourcesOfType(records, 'Observation').length;
      expect((await get('/r4/Observation').expect(200)).body.entry).toHaveLength(10);
      expect((await get('/r4/Observation?_count=500').expect(200)).body.entry).toHaveLength(
        Math.min(100, all),
      );
      const none = await get('/r4/Observation?_total=none&_count=5').expect(200);
      expect(none.body.total).toBeUndefined();
      expect(link(none.body, 'next')).toBeDefined();
      expect(link(none.body, 'last')).toBeUndefined();
      const count = await get('/r4/Observation?_summary=count').expect(200);
      expect(count.body.total).toBe(all);
      expect(count.body).not.toHaveProperty('entry'); // no empty arrays in FHIR JSON
      const subset = await get('/r4/Patient?_elements=gender,birthDate').expect(200);
      for (const entry of subset.body.entry) {
        expect(Object.keys(entry.resource).sort()).toEqual([
          'birthDate',
          'gender',
          'id',
          'meta',
          'resourceType',
        ]);
        expect(entry.resource.meta.tag).toContainEqual(expect.objectContaining({ code: 'SUBSETTED' }));
      }
      // _summary=true: the isSummary elements of the R4 definitions (Synthea Patients carry
      // text, extensions, address … — text and extension are not summary elements).
      const summary = await get('/r4/Patient?_summary=true').expect(200);
      for (const entry of summary.body.entry) {
        expect(entry.resource.text).toBeUndefined();
        expect(entry.resource.extension).toBeUndefined();
        expect(entry.resource.gender).toBeDefined();
        expect(entry.resource.name).toBeDefined();
        expect(entry.resource.meta.tag).toContainEqual(expect.objectContaining({ code: 'SUBSETTED' }));
      }
    });

    it('unknown parameters: ignored with an outcome entry, or 400 with Prefer: handling=strict', async () => {
      const res = await get('/r4/Patient?foo=bar&gender=male').expect(200);
      const outcome = res.body.entry.find((e: any) => e.search.mode === 'outcome');
      expect(outcome.resource.resourceType).toBe('OperationOutcome');
      expect(outcome.resource.issue[0]).toMatchObject({ severity: 'warning', code: 'not-supported' });
      expect(outcome.resource.issue[0].diagnostics).toContain('foo');
      const strict = await get('/r4/Patient?foo=bar').set('Prefer', 'handling=strict').expect(400);
      expect(strict.body.resourceType).toBe('OperationOutcome');
    });

    it('POST _search with a form body, merged with the query string', async () => {
      const res = await request(t.server)
        .post('/r4/Observation/_search?code=8302-2')
        .set(asAlice())
        .type('form')
        .send({ subject: `Patient/${records[1].patientId}` })
        .expect(200);
      const expected = resourcesOfType(records, 'Observation').filter(
        (o) =>
          o.code.coding[0].code === '8302-2' && o.subject.reference === `Patient/${records[1].patientId}`,
      );
      expect(entryIds(res.body).sort()).toEqual(expected.map((o) => o.id).sort());
      await request(t.server)
        .post('/r4/Observation/_search')
        .set(asAlice())
        .set('Content-Type', 'application/json')
        .send('{}')
        .expect(415);
    });

    it('system search with _type', async () => {
      const res = await get('/r4?_type=Patient,Organization&_count=100').expect(200);
      const expected = [...resourcesOfType(records, 'Patient'), ...resourcesOfType(records, 'Organization')];
      expect(entryIds(res.body).sort()).toEqual([...new Set(expected.map((r) => r.id))].sort());
      expect(link(res.body, 'self')).toContain(`${t.settings.urls.base}/r4?_type=`);
    });

    it('system search with _type: newest first across the types, pages that join into the whole order, exact totals', async () => {
      const whole = await get('/r4?_type=Encounter,Condition,Patient&_count=100').expect(200);
      const key = (e: any) => `${e.resource.resourceType}/${e.resource.id}`;
      const order = whole.body.entry.map(key);
      // lastUpdated descending, then id (then type: ties across types)
      const sorted = [...whole.body.entry]
        .sort(
          (a: any, b: any) =>
            b.resource.meta.lastUpdated.localeCompare(a.resource.meta.lastUpdated) ||
            (a.resource.id < b.resource.id ? -1 : a.resource.id > b.resource.id ? 1 : 0) ||
            (a.resource.resourceType < b.resource.resourceType ? -1 : 1),
        )
        .map(key);
      expect(order).toEqual(sorted);
      const expected = ['Encounter', 'Condition', 'Patient'].reduce(
        (n, type) => n + resourcesOfType(records, type).length,
        0,
      );
      expect(order).toHaveLength(Math.min(expected, 100));
      const paged: string[] = [];
      for (let skip = 0; skip < order.length; skip += 7) {
        const page = await get(`/r4?_type=Encounter,Condition,Patient&_count=7&_skip=${skip}`).expect(200);
        expect(page.body.total).toBe(expected);
        paged.push(...page.body.entry.map(key));
      }
      expect(paged).toEqual(order);
    });
  });

  describe('_include and _revinclude', () => {
    it('Encounter:patient includes each patient once, mode include, never a match twice', async () => {
      const res = await get('/r4/Encounter?_include=Encounter:patient&_count=100').expect(200);
      expect(entryIds(res.body)).toHaveLength(resourcesOfType(records, 'Encounter').length);
      expect(entryIds(res.body, 'include').sort()).toEqual(records.map((r) => r.patientId).sort());
      const both = await get(
        `/r4/Patient?_include=Patient:link&_revinclude=Encounter:patient&_count=100`,
      ).expect(200);
      const all = both.body.entry.map((e: any) => e.resource.id);
      expect(new Set(all).size).toBe(all.length);
    });

    it('_revinclude=Provenance:target, Type:TargetType form, wildcard *, and :iterate', async () => {
      const patientId = records[1].patientId;
      const rev = await get(`/r4/Patient?_id=${patientId}&_revinclude=Provenance:target`).expect(200);
      const provenances = rev.body.entry
        .filter((e: any) => e.search.mode === 'include')
        .map((e: any) => e.resource);
      expect(provenances.length).toBeGreaterThan(0);
      // the Provenance of the bundle that wrote the Patient lists it among that bundle's resources
      for (const p of provenances) {
        expect(p.target.map((r: any) => r.reference)).toContainEqual(
          expect.stringMatching(new RegExp(`^Patient/${patientId}/`)),
        );
      }
      const typed = await get(`/r4/Observation?subject=${patientId}&_include=Observation:Patient`).expect(
        200,
      );
      expect(entryIds(typed.body, 'include')).toEqual([patientId]);
      const wildcard = await get(`/r4/Encounter?patient=${patientId}&_include=*&_count=1`).expect(200);
      const encounter = wildcard.body.entry[0].resource;
      const included = entryIds(wildcard.body, 'include');
      expect(included).toContain(patientId);
      expect(included).toContain(encounter.serviceProvider.reference.split('/')[1]);
      const iterate = await get(
        `/r4/Observation?subject=${patientId}&code=8302-2&_include=Observation:encounter&_include:iterate=Encounter:service-provider`,
      ).expect(200);
      const types = iterate.body.entry
        .filter((e: any) => e.search.mode === 'include')
        .map((e: any) => e.resource.resourceType);
      expect(types).toContain('Encounter');
      expect(types).toContain('Organization');
    });

    it('DSTU2 refuses includes (docs/api.md §14); unknown include params are 400', async () => {
      await get('/dstu2/Encounter?_include=Encounter:patient').expect(400);
      await get('/r4/Encounter?_include=Encounter:nope').expect(400);
    });
  });

  describe('tenant scope', () => {
    it("another client's copies and another user's resources never appear", async () => {
      expect((await get('/r4/Patient?name=Malloryson').expect(200)).body.total).toBe(0);
      expect((await get('/r4/Patient?name=Bobson').expect(200)).body.total).toBe(0);
      const own = await get(`/r4/Patient?_id=${records[0].patientId}`).expect(200);
      expect(own.body.entry[0].resource.name[0].family).toBe(records[0].resources[0].name[0].family);
      const bobs = await get('/r4/Observation', bearer(bob.access_token)).expect(200);
      expect(bobs.body.total).toBe(0);
      const included = await get(
        `/r4/Encounter?_include=Encounter:patient&_count=100`,
        bearer(mallory.access_token),
      ).expect(200);
      for (const e of included.body.entry)
        if (e.resource.resourceType === 'Patient') expect(e.resource.name[0].family).toBe('Malloryson');
    });

    it('client-wide GET (x-service-user-id: client) searches across the users of the client only', async () => {
      const res = await get('/r4/Patient?_count=100', clientHeaders(client, 'client')).expect(200);
      const families = res.body.entry.map((e: any) => e.resource.name[0].family).sort();
      expect(families).toContain('Bobson');
      expect(families).not.toContain('Malloryson');
      expect(res.body.total).toBe(records.length + 1);
      const chained = await get(
        '/r4/Observation?subject:Patient.name=Malloryson',
        clientHeaders(client, 'client'),
      ).expect(200);
      expect(chained.body.total).toBe(0);
    });
  });

  describe('store reindex', () => {
    it('rebuilds the index entries of one type across tenants after they were lost', async () => {
      const family = records[0].resources[0].name[0].family as string;
      await t.connection
        .collection('resources')
        .updateMany({ v: 'r4', t: 'Patient' }, { $unset: { idx: '' } });
      expect((await get(`/r4/Patient?name=${family}`).expect(200)).body.total).toBe(0);
      const progress: string[] = [];
      const report = await t.app.get(ReindexService).reindex('r4', 'Patient', (m) => progress.push(m));
      const patients = await t.connection
        .collection('resources')
        .countDocuments({ v: 'r4', t: 'Patient', del: false });
      expect(report).toMatchObject({ scanned: patients, updated: patients, failed: 0 });
      expect(progress.length).toBeGreaterThan(0);
      expect((await get(`/r4/Patient?name=${family}`).expect(200)).body.total).toBe(1);
    });
  });

  describe('bad input: a clear 400 OperationOutcome or a literal match, never a 500', () => {
    it.each([
      ['/r4/Observation?date=2020-13-45', 400],
      ['/r4/Observation?date=xx2020', 400],
      ['/r4/Patient?name:unknownmodifier=x', 400],
      ['/r4/Observation?value-quantity=abc', 400],
      ['/r4/Observation?_count=-1', 400],
      ['/r4/Observation?_count=abc', 400],
      ['/r4/Observation?_skip=99999999', 400],
      ['/r4/Observation?_sort=nonsense', 400],
      ['/r4/Patient?_id=../../etc', 400],
      ['/r4/Patient?_has:Observation:nope:code=x', 400],
      ['/r4/Observation?subject:Patient.name.family=x', 400],
      ['/r4/Nonsense?name=x', 404],
    ])('%s → %s', async (path, status) => {
      const res = await get(path).expect(status);
      expect(res.body.resourceType).toBe('OperationOutcome');
      expect(res.body.issue[0].severity).toBe('error');
    });

    it('operators in keys or values stay literal', async () => {
      const all = records.length;
      const key = await get('/r4/Patient?name[$gt]=&name[$ne]=x').expect(200);
      expect(key.body.total).toBe(all); // unknown parameters: ignored and reported
      expect(key.body.entry.find((e: any) => e.search.mode === 'outcome')).toBeDefined();
      const value = await get(`/r4/Patient?name=${encodeURIComponent('{"$where":"sleep(1000)"}')}`).expect(
        200,
      );
      expect(value.body.total).toBe(0);
      for (const text of ['.*', '^', '(', '[a-z]+', '\\', '$ne']) {
        const res = await get(`/r4/Patient?name=${encodeURIComponent(text)}`).expect(200);
        expect(res.body.total).toBe(0);
      }
      const token = await get(`/r4/Observation?code=${encodeURIComponent('.*|.*')}`).expect(200);
      expect(token.body.total).toBe(0);
      const form = await request(t.server)
        .post('/r4/Patient/_search')
        .set(asAlice())
        .type('form')
        .send('name[$ne]=x')
        .expect(200);
      expect(form.body.total).toBe(all);
    });
  });
});
