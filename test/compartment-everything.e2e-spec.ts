import request from 'supertest';
import { validateResource, type FhirVersion } from '@app/fhir';
import {
  bearer,
  clientHeaders,
  createAppWithUsers,
  expectOutcome,
  TestApp,
  TestClient,
  TestUser,
} from '@app/testing';

/**
 * Compartment search `GET /{v}/Patient/{id}/{type}`, `POST …/{type}/_search` and `GET …/*`
 * (https://hl7.org/fhir/R4/http.html#vsearch) and
 * `Patient/$everything` invoked with POST and at type level
 * (https://hl7.org/fhir/R4/patient-operation-everything.html), in R4, STU3 and DSTU2.
 */
describe('compartment search and Patient/$everything (e2e)', () => {
  let t: TestApp;
  let client: TestClient;
  let alice: TestUser;
  let bob: TestUser;
  const VERSIONS: FhirVersion[] = ['r4', 'stu3', 'dstu2'];
  /** Per version: alice's two patients (with 3 and 1 Observations) and bob's one. */
  const ids: Record<string, { ann: string; ben: string; bobs: string; annObservations: string[] }> = {};

  const as = (user: TestUser) => bearer(user.access_token);
  const get = (path: string, user = alice) => request(t.server).get(path).set(as(user));
  const post = (path: string, body: unknown, user = alice) =>
    request(t.server)
      .post(path)
      .set(as(user))
      .set('Content-Type', 'application/fhir+json')
      .send(JSON.stringify(body));
  const create = async (version: FhirVersion, resource: Record<string, unknown>, user = alice) =>
    (await post(`/${version}/${String(resource.resourceType)}`, resource, user).expect(201)).body
      .id as string;
  const observation = (patient: string, code: string) => ({
    resourceType: 'Observation',
    status: 'final',
    code: { coding: [{ system: 'http://loinc.org', code }] },
    subject: { reference: `Patient/${patient}` },
  });
  const keys = (bundle: any): string[] =>
    (bundle.entry ?? [])
      .filter((e: any) => e.search?.mode === 'match')
      .map((e: any) => `${e.resource.resourceType}/${e.resource.id}`);
  const nextPath = (bundle: any) =>
    bundle.link.find((l: any) => l.relation === 'next')?.url?.slice(t.settings.urls.base.length) as
      string | undefined;
  async function walk(path: string): Promise<string[]> {
    const seen: string[] = [];
    for (let url: string | undefined = path; url;) {
      const page = await get(url).expect(200);
      seen.push(...keys(page.body));
      url = nextPath(page.body);
    }
    return seen;
  }

  beforeAll(async () => {
    ({
      t,
      client,
      users: [alice, bob],
    } = await createAppWithUsers({ users: 2 }));
    for (const version of VERSIONS) {
      const ann = await create(version, { resourceType: 'Patient', name: [{ given: ['Ann'] }] });
      const ben = await create(version, { resourceType: 'Patient', name: [{ given: ['Ben'] }] });
      const bobs = await create(version, { resourceType: 'Patient', name: [{ given: ['Bob'] }] }, bob);
      const annObservations = [
        await create(version, observation(ann, '1111-1')),
        await create(version, observation(ann, '1111-1')),
        await create(version, observation(ann, '2222-2')),
      ];
      await create(version, observation(ben, '1111-1'));
      await create(version, observation(bobs, '1111-1'), bob);
      ids[version] = { ann, ben, bobs, annObservations };
    }
  }, 120_000);
  afterAll(async () => t?.close());

  describe.each(VERSIONS)('%s', (version) => {
    it('Patient/{id}/Observation: the patient compartment only, with search parameters and paging', async () => {
      const { ann, annObservations } = ids[version];
      const all = await get(`/${version}/Patient/${ann}/Observation`).expect(200);
      expect(all.body.type).toBe('searchset');
      expect(all.body.total).toBe(3);
      expect(keys(all.body).sort()).toEqual(annObservations.map((id) => `Observation/${id}`).sort());
      const errors = validateResource(version, all.body, 'Bundle').filter((i) => i.severity === 'error');
      expect(errors).toEqual([]);
      // the same answer as the type-level search on the compartment's parameter
      const typeLevel = await get(`/${version}/Observation?subject=Patient/${ann}`).expect(200);
      expect(keys(all.body).sort()).toEqual(keys(typeLevel.body).sort());
      const coded = await get(`/${version}/Patient/${ann}/Observation?code=http://loinc.org|1111-1`).expect(
        200,
      );
      expect(coded.body.total).toBe(2);
      const first = await get(`/${version}/Patient/${ann}/Observation?_count=2`).expect(200);
      const self = first.body.link.find((l: any) => l.relation === 'self').url as string;
      expect(self.startsWith(`${t.settings.urls.base}/${version}/Patient/${ann}/Observation?`)).toBe(true);
      const walked = await walk(`/${version}/Patient/${ann}/Observation?_count=2`);
      expect(walked.sort()).toEqual(keys(all.body).sort());
    });

    it('POST Patient/{id}/Observation/_search: form parameters merged after the query, as GET answers', async () => {
      const { ann, annObservations } = ids[version];
      const form = (path: string, body: string, user = alice) =>
        request(t.server)
          .post(path)
          .set(as(user))
          .set('Content-Type', 'application/x-www-form-urlencoded')
          .send(body);
      const all = await form(`/${version}/Patient/${ann}/Observation/_search`, '').expect(200);
      expect(all.body.total).toBe(3);
      expect(keys(all.body).sort()).toEqual(annObservations.map((id) => `Observation/${id}`).sort());
      const coded = await form(
        `/${version}/Patient/${ann}/Observation/_search?_count=1`,
        `code=${encodeURIComponent('http://loinc.org|1111-1')}`,
      ).expect(200);
      expect(coded.body.total).toBe(2);
      expect(coded.body.entry).toHaveLength(1);
      // the paging links are the GET form with every parameter, query and form
      const next = nextPath(coded.body)!;
      expect(next.startsWith(`/${version}/Patient/${ann}/Observation?`)).toBe(true);
      expect(new URLSearchParams(next.split('?')[1]).get('code')).toBe('http://loinc.org|1111-1');
      const rest = await get(next).expect(200);
      expect([...keys(coded.body), ...keys(rest.body)].sort()).toEqual(
        (await get(`/${version}/Patient/${ann}/Observation?code=http://loinc.org|1111-1`)).body.entry
          .map((e: any) => `Observation/${e.resource.id}`)
          .sort(),
      );
      // tenant scope: another user of the client does not see the patient
      expectOutcome(
        await form(`/${version}/Patient/${ann}/Observation/_search`, '', bob).expect(404),
        'not-found',
      );
      // a body that is not a form → 415; a bad value → 400
      const json = await post(`/${version}/Patient/${ann}/Observation/_search`, { code: 'x' }).expect(415);
      expectOutcome(json, 'not-supported');
      expectOutcome(
        await form(`/${version}/Patient/${ann}/Observation/_search`, 'date=notadate').expect(400),
        'invalid',
      );
    });

    it('GET Patient/{id}/*: every type of the compartment, the patient included; _type narrows; paged', async () => {
      const { ann, ben, annObservations } = ids[version];
      const all = await get(`/${version}/Patient/${ann}/*?_count=100`).expect(200);
      // the Provenance of each write whose target is the patient is in its compartment too
      const provenances = keys((await get(`/${version}/Patient/${ann}/Provenance?_count=100`)).body);
      expect(provenances.length).toBeGreaterThan(0);
      const expected = [
        `Patient/${ann}`,
        ...annObservations.map((id) => `Observation/${id}`),
        ...provenances,
      ].sort();
      expect(keys(all.body).sort()).toEqual(expected);
      expect(all.body.total).toBe(expected.length);
      expect(keys(all.body)).not.toContain(`Patient/${ben}`);
      const errors = validateResource(version, all.body, 'Bundle').filter((i) => i.severity === 'error');
      expect(errors).toEqual([]);
      const self = all.body.link.find((l: any) => l.relation === 'self').url as string;
      expect(self.startsWith(`${t.settings.urls.base}/${version}/Patient/${ann}/*?`)).toBe(true);
      const observations = await get(`/${version}/Patient/${ann}/*?_type=Observation`).expect(200);
      expect(keys(observations.body).sort()).toEqual(annObservations.map((id) => `Observation/${id}`).sort());
      const walked = await walk(`/${version}/Patient/${ann}/*?_count=2`);
      expect(walked.sort()).toEqual(expected);
      expectOutcome(await get(`/${version}/Patient/${ann}/*`, bob).expect(404), 'not-found');
      expectOutcome(await get(`/${version}/Patient/${ann}/*?_type=Nope`).expect(400), 'invalid');
    });

    it('Patient/{id}/Patient: the patient itself; another user sees nothing of it', async () => {
      const { ann, bobs } = ids[version];
      const self = await get(`/${version}/Patient/${ann}/Patient`).expect(200);
      expect(keys(self.body)).toEqual([`Patient/${ann}`]);
      const hidden = await get(`/${version}/Patient/${ann}/Observation`, bob).expect(404);
      expectOutcome(hidden, 'not-found');
      const own = await get(`/${version}/Patient/${bobs}/Observation`, bob).expect(200);
      expect(own.body.total).toBe(1);
    });

    it('POST Patient/{id}/$everything (empty body or Parameters) answers as GET does', async () => {
      const { ann, ben } = ids[version];
      const viaGet = await get(`/${version}/Patient/${ann}/$everything?_count=100`).expect(200);
      const empty = await request(t.server)
        .post(`/${version}/Patient/${ann}/$everything?_count=100`)
        .set(as(alice))
        .expect(200);
      expect(keys(empty.body)).toEqual(keys(viaGet.body));
      expect(keys(viaGet.body)).toContain(`Patient/${ann}`);
      expect(keys(viaGet.body)).not.toContain(`Patient/${ben}`);
      const paged = await post(`/${version}/Patient/${ann}/$everything`, {
        resourceType: 'Parameters',
        parameter: [
          { name: '_count', valueInteger: 2 },
          { name: '_type', valueString: 'Patient,Observation' },
        ],
      }).expect(200);
      expect(paged.body.entry).toHaveLength(2);
      // a page that does not reach the end has no total unless asked (`_total=accurate`)
      expect(paged.body.total).toBeUndefined();
      expect(paged.body.link.map((link: { relation: string }) => link.relation)).toContain('next');
      const counted = await post(`/${version}/Patient/${ann}/$everything`, {
        resourceType: 'Parameters',
        parameter: [
          { name: '_count', valueInteger: 2 },
          { name: '_type', valueString: 'Patient,Observation' },
          { name: '_total', valueString: 'accurate' },
        ],
      }).expect(200);
      expect(keys(counted.body)).toEqual(keys(paged.body));
      expect(counted.body.total).toBe(4);
    });

    it('type-level GET and POST Patient/$everything: every patient of the caller, paged; none of another user', async () => {
      const { ann, ben, bobs, annObservations } = ids[version];
      const whole = await walk(`/${version}/Patient/$everything?_type=Patient,Observation&_count=2`);
      expect(whole).toEqual(expect.arrayContaining([`Patient/${ann}`, `Patient/${ben}`]));
      expect(whole).toEqual(expect.arrayContaining(annObservations.map((id) => `Observation/${id}`)));
      expect(whole).not.toContain(`Patient/${bobs}`);
      expect(new Set(whole).size).toBe(whole.length);
      expect(whole.filter((key) => key.startsWith('Observation/'))).toHaveLength(4);
      // a page that does not reach the end has no total unless asked for (it reads its rows only)
      const first = await get(`/${version}/Patient/$everything?_type=Patient,Observation&_count=2`).expect(
        200,
      );
      expect(first.body.total).toBeUndefined();
      expect(first.body.link.map((link: { relation: string }) => link.relation)).toContain('next');
      const accurate = await get(
        `/${version}/Patient/$everything?_type=Patient,Observation&_count=2&_total=accurate`,
      ).expect(200);
      expect(accurate.body.total).toBe(whole.length);
      expect(keys(accurate.body)).toEqual(keys(first.body));
      // by type, then id
      const order = (key: string) => key.split('/');
      const sorted = [...whole].sort((a, b) => {
        const [ta, ia] = order(a);
        const [tb, ib] = order(b);
        return ta !== tb ? (ta < tb ? -1 : 1) : ia < ib ? -1 : ia > ib ? 1 : 0;
      });
      expect(whole).toEqual(sorted);
      const viaPost = await post(`/${version}/Patient/$everything`, {
        resourceType: 'Parameters',
        parameter: [
          { name: '_type', valueString: 'Patient,Observation' },
          { name: '_count', valueInteger: 100 },
        ],
      }).expect(200);
      expect(keys(viaPost.body)).toEqual(whole);
      const bobsView = await get(`/${version}/Patient/$everything?_count=100`, bob).expect(200);
      expect(keys(bobsView.body)).toContain(`Patient/${bobs}`);
      expect(keys(bobsView.body)).not.toContain(`Patient/${ann}`);
      // the client itself (every user): every user's patients, in key order (`${v}|${c}|${t}|${id}`)
      const asClient = clientHeaders(client, 'client');
      const clientWide: string[] = [];
      for (
        let url: string | undefined = `/${version}/Patient/$everything?_type=Patient,Observation&_count=2`;
        url;
      ) {
        const page = await request(t.server).get(url).set(asClient).expect(200);
        clientWide.push(...keys(page.body));
        url = nextPath(page.body);
      }
      expect(clientWide).toEqual(expect.arrayContaining([...whole, `Patient/${bobs}`]));
      expect(clientWide).toHaveLength(whole.length + 2);
      const keyOf = (key: string) => key.replace('/', '|');
      expect(clientWide.map(keyOf)).toEqual([...clientWide.map(keyOf)].sort());
    });
  });

  describe('errors answer an OperationOutcome', () => {
    it('a compartment the server does not serve, or a type that is not a compartment → 400', async () => {
      const { ann, annObservations } = ids.r4;
      for (const compartment of ['Encounter', 'Practitioner', 'RelatedPerson', 'Device']) {
        const res = await get(`/r4/${compartment}/x1/Observation`).expect(400);
        expectOutcome(res, 'not-supported');
        expect(res.body.issue[0].diagnostics).toContain(`${compartment} compartment is not supported`);
      }
      const notCompartment = await get(`/r4/Observation/${annObservations[0]}/Patient`).expect(400);
      expectOutcome(notCompartment, 'not-supported');
      // a type with no place in the Patient compartment (R4 CompartmentDefinition-patient)
      const outside = await get(`/r4/Patient/${ann}/Practitioner`).expect(400);
      expectOutcome(outside, 'invalid');
    });

    it('the other forms refuse the same way: another compartment 400, unknown Patient 404', async () => {
      const form = (path: string) =>
        request(t.server)
          .post(path)
          .set(as(alice))
          .set('Content-Type', 'application/x-www-form-urlencoded')
          .send('');
      expectOutcome(await get(`/r4/Encounter/x1/*`).expect(400), 'not-supported');
      expectOutcome(await form(`/r4/Encounter/x1/Observation/_search`).expect(400), 'not-supported');
      expectOutcome(await get(`/r4/Patient/no-such-patient/*`).expect(404), 'not-found');
      expectOutcome(await form(`/r4/Patient/no-such-patient/Observation/_search`).expect(404), 'not-found');
      expectOutcome(await form(`/r4/Patient/${ids.r4.ann}/Practitioner/_search`).expect(400), 'invalid');
      expectOutcome(await form(`/r4/Patient/${ids.r4.ann}/Nonsense/_search`).expect(404), 'not-found');
      expectOutcome(await get(`/r4/Patient/bad_id!/*`).expect(400), 'invalid');
      expectOutcome(await get(`/r4/Nonsense/1/*`).expect(404), 'not-found');
    });

    it('the CapabilityStatement names the Patient compartment in every version', async () => {
      for (const version of VERSIONS) {
        const statement = await request(t.server).get(`/${version}/metadata`).expect(200);
        expect(statement.body.rest[0].compartment).toEqual([
          'http://hl7.org/fhir/CompartmentDefinition/patient',
        ]);
      }
    });

    it('unknown types → 404, a malformed id → 400, an unknown Patient → 404', async () => {
      expectOutcome(await get(`/r4/Patient/${ids.r4.ann}/Nonsense`).expect(404), 'not-found');
      expectOutcome(await get(`/r4/Nonsense/1/Observation`).expect(404), 'not-found');
      expectOutcome(await get(`/r4/Patient/bad_id!/Observation`).expect(400), 'invalid');
      expectOutcome(await get(`/r4/Patient/no-such-patient/Observation`).expect(404), 'not-found');
      await get(`/r9/Patient/${ids.r4.ann}/Observation`).expect(404);
      expectOutcome(
        await post(`/r4/Patient/no-such-patient/$everything`, { resourceType: 'Parameters' }).expect(404),
        'not-found',
      );
    });

    it('bad search parameters of a compartment search → 400 under handling=strict', async () => {
      const path = `/r4/Patient/${ids.r4.ann}/Observation`;
      expectOutcome(await get(`${path}?date=notadate`).expect(400), 'invalid');
      const strict = await get(`${path}?nonsense=1`).set('Prefer', 'handling=strict').expect(400);
      expect(strict.body.resourceType).toBe('OperationOutcome');
    });

    it('POST $everything with a body that is not Parameters, or a complex value → 400', async () => {
      const path = `/r4/Patient/${ids.r4.ann}/$everything`;
      expectOutcome(await post(path, { resourceType: 'Patient' }).expect(400), 'invalid');
      const complex = await post(path, {
        resourceType: 'Parameters',
        parameter: [{ name: '_count', valueQuantity: { value: 2 } }],
      }).expect(400);
      expectOutcome(complex, 'invalid');
      expectOutcome(
        await post(path, {
          resourceType: 'Parameters',
          parameter: [{ name: '_count', valueString: 'x' }],
        }).expect(400),
        'invalid',
      );
      expectOutcome(await post(`/r4/Patient/$everything`, { resourceType: 'Bundle' }).expect(400), 'invalid');
    });
  });
});
