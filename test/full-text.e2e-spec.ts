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
import { entryIds } from '@app/testing/synthea';
import { ReindexService } from '../src/modules/fhir-store/search/reindex.service';

/**
 * Full-text search as a deployment option (FHIR_FULLTEXT, docs/storage.md): on by default; off: no
 * `_content` words stored or indexed, `_content`/`_text` refused with the setting named (ignored
 * only under `Prefer: handling=lenient`); a deployment that turns it on later runs `store reindex`.
 */
describe('full-text search setting (e2e)', () => {
  let off: TestApp;
  let alice: TestUser;
  const sinusitis = {
    resourceType: 'Condition',
    id: 'ft-sinus',
    subject: { reference: 'Patient/ft-p' },
    code: { coding: [{ system: 'http://snomed.info/sct', code: '444814009' }], text: 'Viral sinusitis' },
  };
  const asthma = {
    resourceType: 'Condition',
    id: 'ft-asthma',
    subject: { reference: 'Patient/ft-p' },
    code: { coding: [{ system: 'http://snomed.info/sct', code: '195967001' }], text: 'Asthma' },
  };
  const stored = (t: TestApp, id: string) =>
    t.connection.collection('resources').findOne({ t: 'Condition', id }, { projection: { idx: 1 } });
  const indexNames = async (t: TestApp) =>
    (await t.connection.collection('resources').indexes()).map((index) => index.name);

  beforeAll(async () => {
    off = await createTestApp({ ...IDENTITY_TEST_ENV, FHIR_FULLTEXT: 'off' });
    alice = await createUser(off, await createClient(off));
    for (const resource of [sinusitis, asthma]) {
      await request(off.server)
        .put(`/r4/Condition/${resource.id}`)
        .set(bearer(alice.access_token))
        .send(resource)
        .expect(201);
    }
  }, 60_000);
  afterAll(async () => off?.close());

  describe('off', () => {
    it('stores no words and has no words index; every other entry is there', async () => {
      expect(off.settings.fullText).toBe(false);
      const doc = await stored(off, 'ft-sinus');
      expect(doc?.idx).toMatchObject({ tok: expect.arrayContaining(['code|444814009']) });
      expect(doc?.idx.txt).toBeUndefined();
      expect(await indexNames(off)).not.toContain('search_txt');
      const res = await request(off.server)
        .get('/r4/Condition?code=444814009')
        .set(bearer(alice.access_token))
        .expect(200);
      expect(entryIds(res.body)).toEqual(['ft-sinus']);
    });

    it.each([
      ['/r4/Condition?_content=sinus', undefined],
      ['/r4/Condition?_text=sinus', undefined],
      ['/r4/Condition?_content=sinus', 'handling=strict'],
      ['/r4/?_type=Condition&_content=sinus', undefined],
    ])('%s (Prefer %s) → 400 naming FHIR_FULLTEXT', async (path, prefer) => {
      const call = request(off.server).get(path).set(bearer(alice.access_token));
      const res = await (prefer ? call.set('Prefer', prefer) : call).expect(400);
      expect(res.body.resourceType).toBe('OperationOutcome');
      expect(res.body.issue[0]).toMatchObject({ severity: 'error', code: 'not-supported' });
      expect(res.body.issue[0].diagnostics).toContain('FHIR_FULLTEXT');
    });

    it('POST _search refuses it the same way', async () => {
      const res = await request(off.server)
        .post('/r4/Condition/_search')
        .set(bearer(alice.access_token))
        .type('form')
        .send({ _content: 'sinus' })
        .expect(400);
      expect(res.body.issue[0].diagnostics).toContain('FHIR_FULLTEXT');
    });

    it('Prefer: handling=lenient ignores them as unknown parameters (and says so)', async () => {
      const res = await request(off.server)
        .get('/r4/Condition?_content=sinus&_text=x&code=195967001')
        .set(bearer(alice.access_token))
        .set('Prefer', 'handling=lenient')
        .expect(200);
      expect(entryIds(res.body)).toEqual(['ft-asthma']);
      const outcome = res.body.entry.find((e: any) => e.search?.mode === 'outcome')?.resource;
      expect(outcome.issue.map((i: any) => i.diagnostics).join(' ')).toMatch(/_content.*_text/);
    });

    it('the CapabilityStatement does not list _content', async () => {
      const res = await request(off.server).get('/r4/metadata').expect(200);
      const rest = res.body.rest[0];
      const names = [rest, ...rest.resource].flatMap((r: any) =>
        (r.searchParam ?? []).map((p: any) => p.name),
      );
      expect(names).toContain('_count');
      expect(names).not.toContain('_content');
      expect(names).not.toContain('_text');
    });
  });

  describe('turned on later (the default setting), on the same database', () => {
    let on: TestApp;
    beforeAll(async () => {
      on = await createTestApp(IDENTITY_TEST_ENV, { attachTo: off.dbName });
    }, 60_000);
    afterAll(async () => on?.close());
    const content = (words: string) =>
      request(on.server).get(`/r4/Condition?_content=${words}`).set(bearer(alice.access_token)).expect(200);

    it('creates the words index and advertises _content; resources stored while off have no words until reindexed', async () => {
      expect(on.settings.fullText).toBe(true);
      expect(await indexNames(on)).toContain('search_txt');
      const statement = await request(on.server).get('/r4/metadata').expect(200);
      expect(statement.body.rest[0].searchParam.map((p: any) => p.name)).toContain('_content');
      expect(entryIds((await content('sinus')).body)).toEqual([]);
    });

    it('store reindex adds the words of stored resources; new writes carry them at once', async () => {
      const report = await on.app.get(ReindexService).reindex('r4', 'Condition', () => undefined);
      expect(report).toMatchObject({ scanned: 2, updated: 2, failed: 0 });
      expect((await stored(on, 'ft-sinus'))?.idx.txt).toEqual(expect.arrayContaining(['viral', 'sinusitis']));
      expect(entryIds((await content('SINUS')).body)).toEqual(['ft-sinus']);
      expect(entryIds((await content('viral%20sinusitis')).body)).toEqual(['ft-sinus']);
      await request(on.server)
        .put('/r4/Condition/ft-new')
        .set(bearer(alice.access_token))
        .send({ ...asthma, id: 'ft-new', code: { text: 'Acute bronchitis' } })
        .expect(201);
      expect(entryIds((await content('bronchitis')).body)).toEqual(['ft-new']);
    });

    it('store reindex replaces the words an earlier extraction stored (a Coding code among them)', async () => {
      // The words as the extraction before the string/markdown typing stored them: codes too.
      await on.connection
        .collection('resources')
        .updateOne(
          { t: 'Condition', id: 'ft-sinus' },
          { $set: { 'idx.txt': ['viral', 'sinusitis', '444814009'] } },
        );
      expect(entryIds((await content('444814009')).body)).toEqual(['ft-sinus']);
      const report = await on.app.get(ReindexService).reindex('r4', 'Condition', () => undefined);
      expect(report).toMatchObject({ failed: 0, skipped: 0 });
      const words = (await stored(on, 'ft-sinus'))?.idx.txt;
      expect(words).toEqual(expect.arrayContaining(['viral', 'sinusitis']));
      expect(words).not.toContain('444814009');
      expect(entryIds((await content('444814009')).body)).toEqual([]);
    });

    it('back off: start-up drops the words index and store reindex drops the words', async () => {
      const again = await createTestApp(
        { ...IDENTITY_TEST_ENV, FHIR_FULLTEXT: 'off' },
        { attachTo: off.dbName },
      );
      try {
        expect(await indexNames(again)).not.toContain('search_txt');
        await again.app.get(ReindexService).reindex('r4', 'Condition', () => undefined);
        expect((await stored(again, 'ft-sinus'))?.idx.txt).toBeUndefined();
        expect((await stored(again, 'ft-sinus'))?.idx).toMatchObject({ tok: expect.any(Array) });
      } finally {
        await again.close();
      }
    });
  });
});
