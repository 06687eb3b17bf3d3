import request from 'supertest';
import {
  bearer,
  clientToken,
  createClient,
  createTestApp,
  createUser,
  IDENTITY_TEST_ENV,
  TestApp,
} from '@app/testing';
import { DirectoryEntryInput, sortName } from '../src/modules/directory/directory-entry';
import { DirectoryService } from '../src/modules/directory/directory.service';

/** /api/search and the FHIR view /directory/r4 (docs/api.md §11) on the real database. */

const address = (line: string[], city: string | null) => ({ line, city, state: 'MA', postalCode: null });

function entry(id: string, name: string, over: Partial<DirectoryEntryInput> = {}): DirectoryEntryInput {
  return {
    id,
    name,
    system_type: 'HealthSystem',
    address: address([], null),
    ehr: null,
    fhir_base_url: null,
    logo: null,
    status: 'active',
    ...over,
  };
}

const FIXED: DirectoryEntryInput[] = [
  entry('bgh', 'Boston General Hospital', { address: address(['55 Fruit St'], 'Boston') }),
  entry('elise', 'Hôpital Saint-Élise', {
    address: address(['1 Rue Sainte-Catherine'], 'Montréal'),
    fhir_base_url: 'https://fhir.elise.example/r4',
    ehr: 'Epic',
  }),
  entry('where', 'Where Care Begins', { address: address(['9 Elm St'], 'Worcester') }),
  entry('mgh-long', 'Massachusettsgeneralhospital Clinic', { address: address([], 'Cambridge') }),
  entry('closed', 'Boston Closed Clinic', { status: 'inactive', address: address([], 'Boston') }),
  entry('payer-a', 'Acme Health Plan', { system_type: 'Payer2Payer' }),
  entry('payer-b', 'Acme Health Plan', { system_type: 'PayerPatientAccess' }),
];

// 57 entries with one shared word; names repeat so that the id breaks ties, inserted shuffled.
const PAGING: DirectoryEntryInput[] = Array.from({ length: 57 }, (_v, i) =>
  entry(
    `pg-${String((i * 37) % 57).padStart(2, '0')}`,
    `Paging Clinic ${String.fromCharCode(65 + (i % 19))}`,
    {
      address: address([`${i} Main St`], i % 2 === 0 ? 'Springfield' : 'Lowell'),
    },
  ),
);

describe('directory search (e2e)', () => {
  let t: TestApp;
  let auth: Record<string, string>;

  beforeAll(async () => {
    t = await createTestApp({ ...IDENTITY_TEST_ENV, DIRECTORY_SEED: 'false' });
    const summary = await t.app
      .get(DirectoryService)
      .importRecords([...FIXED, ...PAGING].map((record, i) => ({ line: i + 1, record })));
    expect(summary).toEqual({ inserted: FIXED.length + PAGING.length, updated: 0, rejected: [] });
    const client = await createClient(t);
    auth = bearer((await createUser(t, client)).access_token);
  });
  afterAll(async () => t?.close());

  const search = (query: Record<string, string>) =>
    request(t.server).post('/api/search').query(query).set(auth);
  const ids = (res: request.Response) => (res.body.results as { id: string }[]).map((r) => r.id);

  describe('authorization', () => {
    it('no Authorization → 401 { error, message }', async () => {
      const res = await request(t.server).post('/api/search').query({ query: 'boston' }).expect(401);
      expect(res.body).toEqual({ error: expect.any(String), message: expect.any(String) });
    });

    it('a forged or malformed bearer token → 401', async () => {
      await request(t.server).post('/api/search').set(bearer('not.a.token')).expect(401);
      const [h, p] = auth.Authorization.slice(7).split('.');
      await request(t.server)
        .post('/api/search')
        .set(bearer(`${h}.${p}.AAAA`))
        .expect(401);
    });

    it('client headers are not accepted here (bearer only) → 401', async () => {
      const client = await createClient(t);
      await request(t.server)
        .post('/api/search')
        .set({
          client_id: client.client_id,
          client_secret: client.client_secret,
          'x-service-user-id': 'client',
        })
        .expect(401);
    });

    it('a client-level token of a program realm may search', async () => {
      const token = await clientToken(t, await createClient(t));
      const res = await request(t.server).post('/api/search').query({ query: 'boston' }).set(bearer(token));
      expect(res.status).toBe(201);
      expect(ids(res)).toEqual(['bgh']);
    });
  });

  describe('matching', () => {
    it('POST → 201 { total, offset, results } with the documented record shape', async () => {
      const res = await search({ query: 'boston' }).expect(201);
      expect(res.body).toEqual({
        total: 1,
        offset: 0,
        results: [
          {
            id: 'bgh',
            name: 'Boston General Hospital',
            system_type: 'HealthSystem',
            address: { line: ['55 Fruit St'], city: 'Boston', state: 'MA', postalCode: null },
            ehr: null,
            fhir_base_url: null,
            logo: null,
            status: 'active',
            created_at: expect.any(String),
            updated_at: expect.any(String),
          },
        ],
      });
    });

    it('GET works the same (200)', async () => {
      const res = await request(t.server)
        .get('/api/search')
        .query({ query: 'gen hosp' })
        .set(auth)
        .expect(200);
      expect(ids(res)).toEqual(['bgh']);
    });

    it.each([
      ['name words, any order, prefixes', 'hosp bost', ['bgh']],
      ['address line', 'fruit', ['bgh']],
      ['city', 'worcester', ['where']],
      ['case and accents', 'HOPITAL elise montreal', ['elise']],
      ['accented query', 'Hôpital Élise', ['elise']],
      ['every word must match', 'boston nowhere', []],
      ['a word must match at the start of a word', 'eneral', []],
      ['long words (over the 15 stored prefix characters)', 'massachusettsgeneralh', ['mgh-long']],
      ['long words keep every character', 'massachusettsgenerax', []],
      ['inactive entries never match', 'closed', []],
    ])('%s: %s', async (_label, query, expected) => {
      const res = await search({ query }).expect(201);
      expect(ids(res)).toEqual(expected);
      expect(res.body.total).toBe(expected.length);
    });

    it('regex metacharacters are text, never a pattern', async () => {
      // As a regex "Bost.n" would match "Boston"; as text it is the words "bost" and "n".
      expect(ids(await search({ query: 'Bost.n' }).expect(201))).toEqual([]);
      for (const query of ['.*', '^', '[', '(?:)', '\\']) {
        const res = await search({ query }).expect(201);
        expect(res.body).toEqual({ total: 0, offset: 0, results: [] });
      }
      expect(ids(await search({ query: '^Bos' }).expect(201))).toEqual(['bgh']);
    });

    it('Mongo operators are text or refused, never operators', async () => {
      expect(ids(await search({ query: '$where' }).expect(201))).toEqual(['where']);
      const body = await request(t.server)
        .post('/api/search')
        .set(auth)
        .send({ query: { $ne: null } });
      expect(body.status).toBe(400);
      expect(body.body.message).toMatch(/query must be a single string/);
      // the query string parser keeps `query[$ne]` a literal (unknown) key: no filter at all
      const res = await request(t.server).post('/api/search?query[$ne]=zzz').set(auth).expect(201);
      expect(res.body.total).toBe(FIXED.length + PAGING.length - 1);
    });

    it('body fields work on POST; the query string wins', async () => {
      expect(ids(await request(t.server).post('/api/search').set(auth).send({ query: 'worcester' }))).toEqual(
        ['where'],
      );
      const res = await request(t.server).post('/api/search').query({ query: 'fruit' }).set(auth).send({
        query: 'worcester',
      });
      expect(ids(res)).toEqual(['bgh']);
    });
  });

  describe('filters and paging', () => {
    it('system_type filters', async () => {
      expect(ids(await search({ query: 'acme', system_type: 'Payer2Payer' }).expect(201))).toEqual([
        'payer-a',
      ]);
      expect(ids(await search({ query: 'acme', system_type: 'PayerPatientAccess' }).expect(201))).toEqual([
        'payer-b',
      ]);
      expect(ids(await search({ query: 'acme', system_type: 'HealthSystem' }).expect(201))).toEqual([]);
      expect((await search({ query: 'acme' }).expect(201)).body.total).toBe(2);
    });

    it('walks every page of a broad query: each entry exactly once, ordered by name then id', async () => {
      const seen: { id: string; name: string }[] = [];
      let total = -1;
      for (let offset = 0; ; offset += 20) {
        const res = await search({ query: 'paging', offset: String(offset) }).expect(201);
        expect(res.body.offset).toBe(offset);
        total = res.body.total;
        expect(res.body.results.length).toBeLessThanOrEqual(20);
        if (res.body.results.length === 0) break;
        seen.push(...res.body.results);
      }
      expect(total).toBe(PAGING.length);
      expect(seen.map((e) => e.id).sort()).toEqual(PAGING.map((e) => e.id).sort());
      const key = (e: { id: string; name: string }) => [sortName(e.name), e.id] as const;
      for (let i = 1; i < seen.length; i++) {
        const [a, b] = [key(seen[i - 1]), key(seen[i])];
        expect(a[0] < b[0] || (a[0] === b[0] && a[1] < b[1])).toBe(true);
      }
    });

    it('a city narrows the broad query; an offset past the end is an empty page', async () => {
      const res = await search({ query: 'paging springfield' }).expect(201);
      expect(res.body.total).toBe(29);
      const past = await search({ query: 'paging', offset: '500' }).expect(201);
      expect(past.body).toEqual({ total: PAGING.length, offset: 500, results: [] });
    });

    it.each([
      [
        { system_type: 'Hospital' },
        /system_type must be one of HealthSystem, Payer2Payer, PayerPatientAccess/,
      ],
      [{ system_type: 'healthsystem' }, /system_type must be one of/],
      [{ offset: '-1' }, /offset must be a non-negative integer/],
      [{ offset: 'abc' }, /offset must be a non-negative integer/],
      [{ offset: '1.5' }, /offset must be a non-negative integer/],
      [{ offset: '99999999' }, /offset must be at most/],
    ])('bad input %j → 400 with a message', async (query, message) => {
      const res = await search({ query: 'boston', ...query }).expect(400);
      expect(res.body).toEqual({ error: 'bad_request', message: expect.stringMatching(message) });
    });

    it('a negative offset in a JSON body → 400 as well', async () => {
      await request(t.server).post('/api/search').set(auth).send({ offset: -5 }).expect(400);
    });

    it('a repeated or non-string field (query string, JSON body) → 400; empty system_type and unknown fields are ignored', async () => {
      const badRequest = (res: request.Response, message: RegExp) =>
        expect([res.status, res.body]).toEqual([
          400,
          { error: 'bad_request', message: expect.stringMatching(message) },
        ]);
      badRequest(
        await request(t.server).get('/api/search').query('query=a&query=b').set(auth),
        /^query must be a single string$/,
      );
      badRequest(
        await request(t.server)
          .post('/api/search')
          .query('system_type=HealthSystem&system_type=Payer2Payer')
          .set(auth),
        /^system_type must be a single string$/,
      );
      badRequest(
        await request(t.server).post('/api/search').set(auth).send({ system_type: 7 }),
        /^system_type must be a single string$/,
      );
      badRequest(
        await request(t.server)
          .post('/api/search')
          .set(auth)
          .send([{ query: 'boston' }]),
        /object is expected/,
      );
      const all = await search({ query: 'boston', system_type: '' }).expect(201);
      const filtered = await request(t.server)
        .post('/api/search')
        .set(auth)
        .send({ query: 'boston', system_type: '', sort: 'name', limit: 1 })
        .expect(201);
      expect(filtered.body).toEqual(all.body);
      // query parameters win over body fields
      const winner = await request(t.server)
        .post('/api/search')
        .query({ query: 'boston' })
        .set(auth)
        .send({ query: 'zzzz-nothing' })
        .expect(201);
      expect(winner.body).toEqual(all.body);
    });
  });

  describe('FHIR view /directory/r4', () => {
    it('Organization search: searchset Bundle with paging links', async () => {
      const res = await request(t.server)
        .get('/directory/r4/Organization')
        .query({ name: 'paging', _count: '5', _tag: 'directory' })
        .set(auth)
        .expect(200);
      expect(res.headers['content-type']).toMatch(/application\/fhir\+json/);
      expect(res.body).toMatchObject({ resourceType: 'Bundle', type: 'searchset', total: PAGING.length });
      expect(res.body.entry).toHaveLength(5);
      expect(res.body.entry[0].resource.resourceType).toBe('Organization');
      expect(res.body.entry[0].fullUrl).toMatch(/\/directory\/r4\/Organization\/pg-/);
      const next = res.body.link.find((l: { relation: string }) => l.relation === 'next');
      expect(next.url).toMatch(/_count=5&_offset=5$/);
    });

    it('Organization read and type filter map the entry', async () => {
      const res = await request(t.server).get('/directory/r4/Organization/elise').set(auth).expect(200);
      expect(res.body).toMatchObject({
        resourceType: 'Organization',
        id: 'elise',
        active: true,
        name: 'Hôpital Saint-Élise',
        address: [{ line: ['1 Rue Sainte-Catherine'], city: 'Montréal', state: 'MA' }],
        endpoint: [{ reference: 'Endpoint/elise' }],
        meta: { tag: [{ code: 'directory' }] },
      });
      const payers = await request(t.server)
        .get('/directory/r4/Organization')
        .query({ type: 'Payer2Payer' })
        .set(auth)
        .expect(200);
      expect(payers.body.entry.map((e: any) => e.resource.id)).toEqual(['payer-a']);
    });

    it('Endpoint read: address is the FHIR base URL; none without one → 404 OperationOutcome', async () => {
      const res = await request(t.server).get('/directory/r4/Endpoint/elise').set(auth).expect(200);
      expect(res.body).toMatchObject({
        resourceType: 'Endpoint',
        status: 'active',
        connectionType: { code: 'hl7-fhir-rest' },
        address: 'https://fhir.elise.example/r4',
        managingOrganization: { reference: 'Organization/elise' },
      });
      const none = await request(t.server).get('/directory/r4/Endpoint/bgh').set(auth).expect(404);
      expect(none.body).toMatchObject({ resourceType: 'OperationOutcome', issue: [{ code: 'not-found' }] });
      await request(t.server).get('/directory/r4/Organization/nope').set(auth).expect(404);
    });

    it('errors are OperationOutcomes: unknown parameter 400, bad _count 400, no token 401', async () => {
      const unknown = await request(t.server).get('/directory/r4/Organization?foo=1').set(auth).expect(400);
      expect(unknown.body).toMatchObject({ resourceType: 'OperationOutcome', issue: [{ code: 'invalid' }] });
      await request(t.server).get('/directory/r4/Organization?_count=-1').set(auth).expect(400);
      await request(t.server).get('/directory/r4/Organization?type=Hospital').set(auth).expect(400);
      const anonymous = await request(t.server).get('/directory/r4/Organization').expect(401);
      expect(anonymous.body.resourceType).toBe('OperationOutcome');
    });
  });

  it('documents its routes in the OpenAPI document', async () => {
    const doc = await request(t.server).get('/docs-json').expect(200);
    expect(doc.body.paths['/api/search'].post.security).toEqual([{ bearer: [] }]);
    expect(doc.body.paths['/connect/system/clinical'].get).toBeDefined();
    expect(doc.body.paths['/directory/r4/Organization'].get).toBeDefined();
    expect(doc.body.components.schemas.DirectoryEntryDto.properties.fhir_base_url).toBeDefined();
    const searchParameters = doc.body.paths['/api/search'].get.parameters;
    expect(searchParameters.find((p: { name: string }) => p.name === 'system_type').schema.enum).toEqual([
      'HealthSystem',
      'Payer2Payer',
      'PayerPatientAccess',
    ]);
    expect(doc.body.components.schemas.DirectorySearchBodyDto.properties.query).toBeDefined();
    expect(doc.body.components.schemas.ClinicalListInputDto.properties.systemType.enum).toHaveLength(3);
  });
});
