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
import { entryIds, loadSyntheaPatients, resourcesOfType, type SyntheaRecord } from '@app/testing/synthea';

/**
 * Issue 5: each search parameter type, modifier and prefix on real Synthea R4 records. Every
 * expected answer is computed from the loaded JSON, never written down.
 */
describe('FHIR search parameters (e2e, Synthea R4)', () => {
  let t: TestApp;
  let alice: TestUser;
  let records: SyntheaRecord[];
  let observations: Array<Record<string, any>>;
  let beforeLoad: string;
  const ids = (list: Array<Record<string, any>>) => list.map((r) => String(r.id)).sort();

  beforeAll(async () => {
    // `_content` is searched here: full text on, whatever the environment says (test/full-text.e2e-spec.ts)
    t = await createTestApp({ ...IDENTITY_TEST_ENV, FHIR_FULLTEXT: 'on' });
    const client = await createClient(t);
    alice = await createUser(t, client);
    beforeLoad = new Date(Date.now() - 1000).toISOString();
    records = await loadSyntheaPatients(t, bearer(alice.access_token), { count: 3 });
    observations = resourcesOfType(records, 'Observation');
  }, 120_000);
  afterAll(async () => t?.close());

  /** Every match of a search (pages of 100), sorted ids. */
  async function matchIds(path: string): Promise<string[]> {
    const found: string[] = [];
    let url: string | undefined = `${path}${path.includes('?') ? '&' : '?'}_count=100`;
    while (url) {
      const res = await request(t.server).get(url).set(bearer(alice.access_token));
      if (res.status !== 200) throw new Error(`${url}: ${res.status} ${JSON.stringify(res.body)}`);
      found.push(...entryIds(res.body));
      const next = res.body.link.find((l: any) => l.relation === 'next')?.url as string | undefined;
      url = next?.slice(t.settings.urls.base.length);
    }
    return found.sort();
  }
  const patient = (n: number) => records[n].patientId;
  const observationsOf = (n: number) =>
    observations.filter((o) => o.subject.reference === `Patient/${patient(n)}`);
  const hasCoding = (o: any, system: string | undefined, code: string) =>
    o.code.coding.some((c: any) => c.code === code && (system === undefined || c.system === system));

  describe('string', () => {
    const family = () => records[1].resources[0].name[0].family as string; // McGlynn
    it('default: case- and accent-insensitive starts-with', async () => {
      expect(await matchIds(`/r4/Patient?name=${family().slice(0, 4).toUpperCase()}`)).toEqual([patient(1)]);
      const accented = family().replace(/y/, 'ý').toLowerCase();
      expect(await matchIds(`/r4/Patient?family=${encodeURIComponent(accented)}`)).toEqual([patient(1)]);
      expect(await matchIds(`/r4/Patient?name=${family().slice(2)}`)).toEqual([]);
    });
    it(':exact and :contains', async () => {
      expect(await matchIds(`/r4/Patient?name:exact=${family()}`)).toEqual([patient(1)]);
      expect(await matchIds(`/r4/Patient?name:exact=${family().toLowerCase()}`)).toEqual([]);
      expect(await matchIds(`/r4/Patient?name:contains=${family().slice(2, 5).toLowerCase()}`)).toEqual([
        patient(1),
      ]);
    });
  });

  describe('token', () => {
    const height = () => observations.filter((o) => hasCoding(o, 'http://loinc.org', '8302-2'));
    it('code, system|code, |code, system|', async () => {
      expect(height().length).toBeGreaterThan(2);
      expect(await matchIds('/r4/Observation?code=8302-2')).toEqual(ids(height()));
      expect(await matchIds('/r4/Observation?code=http://loinc.org|8302-2')).toEqual(ids(height()));
      expect(await matchIds('/r4/Observation?code=|8302-2')).toEqual([]);
      const loinc = observations.filter((o) =>
        o.code.coding.some((c: any) => c.system === 'http://loinc.org'),
      );
      expect(await matchIds('/r4/Observation?code=http://loinc.org|')).toEqual(ids(loinc));
    });
    it(':not, :text, comma = OR, repeated = AND', async () => {
      const notHeight = observations.filter((o) => !hasCoding(o, undefined, '8302-2'));
      expect(await matchIds('/r4/Observation?code:not=8302-2')).toEqual(ids(notHeight));
      expect(await matchIds('/r4/Observation?code:text=body%20height')).toEqual(ids(height()));
      const weight = observations.filter((o) => hasCoding(o, undefined, '29463-7'));
      expect(await matchIds('/r4/Observation?code=8302-2,29463-7')).toEqual(ids([...height(), ...weight]));
      expect(await matchIds(`/r4/Observation?code=8302-2&subject=Patient/${patient(2)}`)).toEqual(
        ids(height().filter((o) => o.subject.reference === `Patient/${patient(2)}`)),
      );
    });
    it('Identifier, code and boolean elements', async () => {
      const identifier = records[0].resources[0].identifier[1];
      expect(await matchIds(`/r4/Patient?identifier=${identifier.system}|${identifier.value}`)).toEqual([
        patient(0),
      ]);
      const males = resourcesOfType(records, 'Patient').filter((p) => p.gender === 'male');
      expect(await matchIds('/r4/Patient?gender=male')).toEqual(ids(males));
      expect(await matchIds('/r4/Encounter?status=finished')).toEqual(
        ids(resourcesOfType(records, 'Encounter')),
      );
    });
  });

  describe('reference', () => {
    it('Type/id, bare id, :Type modifier, absolute URL of this server', async () => {
      const expected = ids(observationsOf(2));
      expect(await matchIds(`/r4/Observation?subject=Patient/${patient(2)}`)).toEqual(expected);
      expect(await matchIds(`/r4/Observation?subject=${patient(2)}`)).toEqual(expected);
      expect(await matchIds(`/r4/Observation?subject:Patient=${patient(2)}`)).toEqual(expected);
      expect(
        await matchIds(`/r4/Observation?patient=${t.settings.urls.base}/r4/Patient/${patient(2)}`),
      ).toEqual(expected);
    });
    it('one level of chaining and _has (reverse chaining)', async () => {
      const family = records[1].resources[0].name[0].family;
      expect(await matchIds(`/r4/Observation?subject:Patient.name=${family}`)).toEqual(
        ids(observationsOf(1)),
      );
      expect(await matchIds(`/r4/Observation?subject:Patient.name=nobody-of-that-name`)).toEqual([]);
      const withHeight = records.filter((r) =>
        observations.some(
          (o) => hasCoding(o, undefined, '8302-2') && o.subject.reference === `Patient/${r.patientId}`,
        ),
      );
      expect(await matchIds('/r4/Patient?_has:Observation:patient:code=8302-2')).toEqual(
        withHeight.map((r) => r.patientId).sort(),
      );
    });
  });

  describe('derived parameters (stored as the parameters they are made of)', () => {
    const components = (o: any): any[] => o.component ?? [];
    it('combo-code and combo-value-quantity: the code and the components', async () => {
      const systolic = observations.filter(
        (o) =>
          hasCoding(o, undefined, '8480-6') || components(o).some((c) => hasCoding(c, undefined, '8480-6')),
      );
      expect(systolic.length).toBeGreaterThan(0);
      expect(await matchIds('/r4/Observation?combo-code=http://loinc.org|8480-6')).toEqual(ids(systolic));
      expect(await matchIds('/r4/Observation?combo-code=8480-6,8302-2')).toEqual(
        ids(observations.filter((o) => systolic.includes(o) || hasCoding(o, undefined, '8302-2'))),
      );
      const above = (q: any) => typeof q?.value === 'number' && q.value > 130;
      const high = observations.filter(
        (o) => above(o.valueQuantity) || components(o).some((c) => above(c.valueQuantity)),
      );
      expect(high.length).toBeGreaterThan(0);
      expect(await matchIds('/r4/Observation?combo-value-quantity=gt130')).toEqual(ids(high));
      const notSystolic = observations.filter((o) => !systolic.includes(o));
      expect(await matchIds('/r4/Observation?combo-code:not=8480-6')).toEqual(ids(notSystolic));
    });

    it('patient: the Patient subjects; another type finds nothing; across types each type its own way', async () => {
      expect(await matchIds(`/r4/Observation?patient=${patient(0)}`)).toEqual(ids(observationsOf(0)));
      expect(await matchIds(`/r4/Observation?patient=Group/${patient(0)}`)).toEqual([]);
      const conditionsOf = (n: number) =>
        resourcesOfType(records, 'Condition').filter((c) => c.subject.reference === `Patient/${patient(n)}`);
      const n = [0, 1, 2].find((k) => conditionsOf(k).length > 0)!;
      expect(n).toBeDefined();
      expect(await matchIds(`/r4?_type=Observation,Condition&patient=${patient(n)}`)).toEqual(
        ids([...observationsOf(n), ...conditionsOf(n)]),
      );
      expect(await matchIds(`/r4/Observation?patient:missing=true`)).toEqual([]);
    });

    it('_revinclude, _include and chains on a derived reference; phonetic as name', async () => {
      const res = await request(t.server)
        .get(`/r4/Patient?_id=${patient(1)}&_revinclude=Observation:patient&_count=1`)
        .set(bearer(alice.access_token))
        .expect(200);
      const included = res.body.entry.filter((e: any) => e.search.mode === 'include');
      const got = included.map((e: any) => e.resource.id).sort();
      expect(got.length).toBeGreaterThan(0);
      // every one of the patient's Observations, unless the page's byte budget cut them (it says so)
      const cut = res.body.entry.some((e: any) => e.search.mode === 'outcome');
      if (cut) expect(ids(observationsOf(1))).toEqual(expect.arrayContaining(got));
      else expect(got).toEqual(ids(observationsOf(1)));
      const one = observationsOf(2)[0];
      const withPatient = await request(t.server)
        .get(`/r4/Observation?_id=${one.id}&_include=Observation:patient`)
        .set(bearer(alice.access_token))
        .expect(200);
      expect(withPatient.body.entry.map((e: any) => `${e.resource.resourceType}/${e.resource.id}`)).toEqual([
        `Observation/${one.id}`,
        `Patient/${patient(2)}`,
      ]);
      const family = records[1].resources[0].name[0].family;
      expect(await matchIds(`/r4/Observation?patient.name=${family}`)).toEqual(ids(observationsOf(1)));
      expect(await matchIds(`/r4/Patient?phonetic=${family}`)).toEqual([patient(1)]);
    });
  });

  describe('date prefixes and precision', () => {
    const span = (o: any) => {
      const lo = new Date(o.effectiveDateTime).getTime();
      return { lo, hi: lo + 999 };
    };
    const year = (y: number) => ({ lo: Date.UTC(y, 0, 1), hi: Date.UTC(y + 1, 0, 1) - 1 });
    const expectations: Record<
      string,
      (v: { lo: number; hi: number }, r: { lo: number; hi: number }) => boolean
    > = {
      eq: (v, r) => v.lo >= r.lo && v.hi <= r.hi,
      ne: (v, r) => v.lo < r.lo || v.hi > r.hi,
      gt: (v, r) => v.hi > r.hi,
      lt: (v, r) => v.lo < r.lo,
      ge: (v, r) => v.hi >= r.lo,
      le: (v, r) => v.lo <= r.hi,
      sa: (v, r) => v.lo > r.hi,
      eb: (v, r) => v.hi < r.lo,
    };
    it.each(Object.keys(expectations))('%s on a whole year', async (prefix) => {
      const y = new Date(observations[observations.length - 1].effectiveDateTime).getUTCFullYear();
      const expected = observations.filter((o) => expectations[prefix](span(o), year(y)));
      expect(await matchIds(`/r4/Observation?date=${prefix}${y}`)).toEqual(ids(expected));
    });
    it('ap widens the range; Period (Encounter) and date (Patient.birthDate) elements', async () => {
      const y = new Date(observations[0].effectiveDateTime).getUTCFullYear();
      const exact = await matchIds(`/r4/Observation?date=${y}`);
      expect(exact.length).toBeGreaterThan(0);
      expect(await matchIds(`/r4/Observation?date=ap${y}`)).toEqual(expect.arrayContaining(exact));
      const encounter = resourcesOfType(records, 'Encounter')[0];
      const month = new Date(encounter.period.start).toISOString().slice(0, 7); // the search reads dates in UTC
      expect(await matchIds(`/r4/Encounter?date=${month}&patient=${encounter.subject.reference}`)).toContain(
        encounter.id,
      );
      const born = records[1].resources[0].birthDate as string;
      expect(await matchIds(`/r4/Patient?birthdate=${born.slice(0, 7)}`)).toEqual([patient(1)]);
    });
  });

  describe('number, quantity, uri, :missing', () => {
    it('number with prefixes (RiskAssessment.prediction.probability)', async () => {
      for (const [id, probability] of [
        ['risk-low', 0.25],
        ['risk-high', 0.7],
      ] as const) {
        await request(t.server)
          .put(`/r4/RiskAssessment/${id}`)
          .set(bearer(alice.access_token))
          .set('Content-Type', 'application/fhir+json')
          .send({
            resourceType: 'RiskAssessment',
            id,
            status: 'final',
            subject: { reference: `Patient/${patient(0)}` },
            prediction: [{ probabilityDecimal: probability }],
          })
          .expect(201);
      }
      expect(await matchIds('/r4/RiskAssessment?probability=gt0.5')).toEqual(['risk-high']);
      expect(await matchIds('/r4/RiskAssessment?probability=0.25')).toEqual(['risk-low']);
      expect(await matchIds('/r4/RiskAssessment?probability=le0.7')).toEqual(['risk-high', 'risk-low']);
    });
    it('quantity value|system|code with prefixes', async () => {
      const tall = observations.filter((o) => o.valueQuantity?.code === 'cm' && o.valueQuantity.value > 100);
      expect(tall.length).toBeGreaterThan(0);
      expect(await matchIds('/r4/Observation?value-quantity=gt100|http://unitsofmeasure.org|cm')).toEqual(
        ids(tall),
      );
      const first = observations.find((o) => o.valueQuantity)!;
      const same = observations.filter(
        (o) =>
          o.valueQuantity &&
          Math.abs(o.valueQuantity.value - first.valueQuantity.value) < 1e-9 &&
          o.valueQuantity.code === first.valueQuantity.code,
      );
      expect(
        await matchIds(
          `/r4/Observation?value-quantity=${first.valueQuantity.value}||${encodeURIComponent(first.valueQuantity.code)}`,
        ),
      ).toEqual(ids(same));
    });
    it('uri with :below and :above', async () => {
      const url = 'http://example.org/fhir/ValueSet/search-test';
      await request(t.server)
        .post('/r4/ValueSet')
        .set(bearer(alice.access_token))
        .set('Content-Type', 'application/fhir+json')
        .send({ resourceType: 'ValueSet', status: 'active', url })
        .expect(201);
      expect(await matchIds(`/r4/ValueSet?url=${url}`)).toHaveLength(1);
      expect(await matchIds('/r4/ValueSet?url:below=http://example.org/fhir')).toHaveLength(1);
      expect(await matchIds(`/r4/ValueSet?url:above=${url}/child/path`)).toHaveLength(1);
      expect(await matchIds('/r4/ValueSet?url:below=http://example.org/other')).toHaveLength(0);
    });
    it(':missing on every type', async () => {
      const withoutQuantity = observations.filter((o) => !o.valueQuantity);
      expect(withoutQuantity.length).toBeGreaterThan(0);
      expect(await matchIds('/r4/Observation?value-quantity:missing=true')).toEqual(ids(withoutQuantity));
      expect(await matchIds('/r4/Observation?value-quantity:missing=false')).toEqual(
        ids(observations.filter((o) => o.valueQuantity)),
      );
      expect(await matchIds('/r4/Patient?death-date:missing=true')).toHaveLength(3);
      expect(await matchIds('/r4/Patient?name:missing=false')).toHaveLength(3);
      expect(await matchIds('/r4/Observation?encounter:missing=true')).toEqual(
        ids(observations.filter((o) => !o.encounter)),
      );
    });
  });

  describe('special and common parameters', () => {
    it('_id, _lastUpdated, _content', async () => {
      expect(await matchIds(`/r4/Patient?_id=${patient(0)},${patient(2)}`)).toEqual(
        [patient(0), patient(2)].sort(),
      );
      expect(await matchIds(`/r4/Patient?_lastUpdated=gt${beforeLoad}`)).toHaveLength(3);
      expect(await matchIds(`/r4/Patient?_lastUpdated=lt${beforeLoad}`)).toEqual([]);
      const conditions = resourcesOfType(records, 'Condition');
      const sinus = conditions.filter((c) => /sinusitis/i.test(c.code.text));
      expect(sinus.length).toBeGreaterThan(0);
      expect(await matchIds('/r4/Condition?_content=SINUS')).toEqual(ids(sinus));
      expect(await matchIds('/r4/Condition?_content=viral%20sinusitis')).toEqual(
        ids(sinus.filter((c) => /viral/i.test(c.code.text))),
      );
    });
    it('_sort on several keys, descending with -', async () => {
      const res = await request(t.server)
        .get(`/r4/Observation?subject=Patient/${patient(2)}&_sort=-date,_id&_count=100`)
        .set(bearer(alice.access_token))
        .expect(200);
      const times = res.body.entry.map((e: any) => new Date(e.resource.effectiveDateTime).getTime());
      expect(times).toEqual([...times].sort((a, b) => b - a));
      const patients = await request(t.server)
        .get('/r4/Patient?_sort=birthdate')
        .set(bearer(alice.access_token))
        .expect(200);
      const births = patients.body.entry.map((e: any) => e.resource.birthDate);
      expect(births).toEqual([...births].sort());
    });
    it('STU3 and DSTU2 searches run on their own definitions', async () => {
      for (const version of ['stu3', 'dstu2']) {
        await request(t.server)
          .post(`/${version}/Patient`)
          .set(bearer(alice.access_token))
          .set('Content-Type', 'application/fhir+json')
          // DSTU2 HumanName.family repeats (https://hl7.org/fhir/DSTU2/datatypes.html#HumanName)
          .send({
            resourceType: 'Patient',
            name: [{ family: version === 'dstu2' ? ['Versionson'] : 'Versionson' }],
            gender: 'other',
          })
          .expect(201);
        expect(await matchIds(`/${version}/Patient?name=versions&gender=other`)).toHaveLength(1);
        expect(await matchIds(`/${version}/Patient?name=McGlynn`)).toHaveLength(0);
      }
    });
  });
});
