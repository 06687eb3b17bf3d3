import request from 'supertest';
import { bearer, createAppWithUsers, IDENTITY_TEST_ENV, TestApp, TestUser } from '@app/testing';
import { entryIds, loadSyntheaPatients, resourcesOfType, type SyntheaRecord } from '@app/testing/synthea';
import { recordQueries } from '@app/testing/query-plans';
import { compartmentTypes } from '../src/storage/search/patient-compartment-filter';

const compartmentTypesOf = (version: 'r4') => compartmentTypes(version).types;

/** docs/api.md §6, §7: `GET` and `DELETE /{v}/Patient/{id}/$everything` on Synthea R4 records. */
describe('Patient/$everything (e2e, Synthea R4)', () => {
  let t: TestApp;
  let alice: TestUser;
  let bob: TestUser;
  let records: SyntheaRecord[];
  const asAlice = () => bearer(alice.access_token);
  const get = (path: string, headers = asAlice()) => request(t.server).get(path).set(headers);
  const next = (bundle: any) =>
    bundle.link.find((l: any) => l.relation === 'next')?.url?.slice(t.settings.urls.base.length) as
      string | undefined;

  beforeAll(async () => {
    ({
      t,
      users: [alice, bob],
      // METRICS_ENABLED turns the driver's command monitoring on (recordQueries listens to it)
    } = await createAppWithUsers({ users: 2 }, { ...IDENTITY_TEST_ENV, METRICS_ENABLED: 'true' }));
    records = await loadSyntheaPatients(t, asAlice(), { count: 2, skip: 1 });
  }, 120_000);
  afterAll(async () => t?.close());

  async function walk(path: string): Promise<any[]> {
    const resources: any[] = [];
    let url: string | undefined = path;
    while (url) {
      const res = await get(url).expect(200);
      resources.push(
        ...res.body.entry.filter((e: any) => e.search.mode === 'match').map((e: any) => e.resource),
      );
      url = next(res.body);
    }
    return resources;
  }

  /** The order of one patient's `$everything`: the Patient, its compartment by type and newest first, then the rest by type and id. */
  function expectEverythingOrder(all: any[], patientId: string): void {
    expect(`${all[0].resourceType}/${all[0].id}`).toBe(`Patient/${patientId}`);
    const compartmentTypes = new Set(compartmentTypesOf('r4'));
    const inCompartment = all.slice(1).findIndex((r) => !compartmentTypes.has(r.resourceType));
    const compartment = inCompartment < 0 ? all.slice(1) : all.slice(1, 1 + inCompartment);
    const outside = inCompartment < 0 ? [] : all.slice(1 + inCompartment);
    for (let i = 1; i < compartment.length; i++) {
      const [a, b] = [compartment[i - 1], compartment[i]];
      if (a.resourceType !== b.resourceType) expect(a.resourceType < b.resourceType).toBe(true);
      else expect(Date.parse(a.meta.lastUpdated)).toBeGreaterThanOrEqual(Date.parse(b.meta.lastUpdated));
    }
    const outsideKeys = outside.map((r) => [r.resourceType, r.id]);
    for (const [type] of outsideKeys) expect(compartmentTypes.has(type)).toBe(false);
    expect(outsideKeys).toEqual(
      [...outsideKeys].sort(([t1, i1], [t2, i2]) =>
        t1 !== t2 ? (t1 < t2 ? -1 : 1) : i1 < i2 ? -1 : i1 > i2 ? 1 : 0,
      ),
    );
  }

  it('pages (10 by default) through the patient, its compartment by type newest first, then what it references', async () => {
    const [record, other] = records;
    const path = `/r4/Patient/${record.patientId}/$everything`;
    const first = await get(path).expect(200);
    expect(first.body.type).toBe('searchset');
    expect(first.body.entry).toHaveLength(10);
    // a page short of the end has no total unless asked for
    expect(first.body.total).toBeUndefined();
    expect(first.body.link.map((l: any) => l.relation)).not.toContain('last');
    const counted = await get(`${path}?_total=accurate`).expect(200);
    expect(counted.body.entry.map((e: any) => e.fullUrl)).toEqual(
      first.body.entry.map((e: any) => e.fullUrl),
    );
    const all = await walk(path);
    expect(all).toHaveLength(counted.body.total);
    const keys = all.map((r) => `${r.resourceType}/${r.id}`);
    expect(new Set(keys).size).toBe(keys.length);
    // Every resource of the record: the Patient, its clinical data, its Practitioners and Organizations.
    expect(keys).toEqual(expect.arrayContaining(record.resources.map((r) => `${r.resourceType}/${r.id}`)));
    const extra = all.filter((r) => !record.resources.some((x) => x.id === r.id));
    for (const r of extra) expect(r.resourceType).toBe('Provenance'); // the store's Provenances of the Patient
    expectEverythingOrder(all, record.patientId);
    expect(all.some((r) => r.resourceType === 'Practitioner')).toBe(true);
    expect(keys).not.toContain(`Patient/${other.patientId}`);
    const otherObservations = other.resources
      .filter((r) => r.resourceType === 'Observation')
      .map((r) => r.id);
    expect(all.filter((r) => otherObservations.includes(r.id))).toEqual([]);
    expect(await get(`${path}?_total=sometimes`).expect(400)).toBeTruthy();
    // `_count=0`: the total alone
    const none = await get(`${path}?_count=0`).expect(200);
    expect(none.body.entry ?? []).toEqual([]);
    expect(none.body.total).toBe(counted.body.total);
  });

  it('pages of any size walk the same sequence; the page that reaches the end has the total', async () => {
    const path = `/r4/Patient/${records[0].patientId}/$everything`;
    const key = (r: any) => `${r.resourceType}/${r.id}`;
    const whole = (await walk(`${path}?_count=100`)).map(key);
    for (const count of [1, 7]) expect((await walk(`${path}?_count=${count}`)).map(key)).toEqual(whole);
    // a page across the end of the compartment: its last resources, then the first outside it
    const compartmentTypes = new Set(compartmentTypesOf('r4'));
    const outsideAt = whole.findIndex((k) => !compartmentTypes.has(k.split('/')[0]));
    expect(outsideAt).toBeGreaterThan(1);
    const across = await get(`${path}?_count=4&_skip=${outsideAt - 2}`).expect(200);
    expect(across.body.entry.map((e: any) => key(e.resource))).toEqual(
      whole.slice(outsideAt - 2, outsideAt + 2),
    );
    expect(across.body.total).toBe(whole.length);
    // a page after the compartment, and one past everything
    const after = await get(`${path}?_count=2&_skip=${outsideAt + 1}`).expect(200);
    expect(after.body.entry.map((e: any) => key(e.resource))).toEqual(
      whole.slice(outsideAt + 1, outsideAt + 3),
    );
    expect(after.body.total).toBe(whole.length);
    const past = await get(`${path}?_count=2&_skip=${whole.length}`).expect(200);
    expect(past.body.entry ?? []).toEqual([]);
    expect(past.body.total).toBe(whole.length);
    expect(past.body.link.map((l: any) => l.relation)).not.toContain('next');
    // without the Patient (`_type`), the compartment starts the sequence
    const withoutPatient = (await walk(`${path}?_count=3&_type=Condition,Encounter,Practitioner`)).map(key);
    expect(withoutPatient).toEqual(
      whole.filter((k) => ['Condition', 'Encounter', 'Practitioner'].includes(k.split('/')[0])),
    );
  });

  it('a compartment that references over 200 resources outside it: those follow it, by type and id', async () => {
    // Bob's patient: 205 Encounters, each at its own Organization (outside the compartment), and 3
    // Procedures.
    const patientId = 'many-outside';
    const entry = (resource: any) => ({
      resource,
      request: { method: 'PUT', url: `${resource.resourceType}/${resource.id}` },
    });
    const resources: any[] = [{ resourceType: 'Patient', id: patientId }];
    for (let i = 0; i < 205; i++) {
      const n = String(i).padStart(3, '0');
      resources.push({ resourceType: 'Organization', id: `org-${n}`, name: `Organization ${n}` });
      resources.push({
        resourceType: 'Encounter',
        id: `enc-${n}`,
        status: 'finished',
        class: { system: 'http://terminology.hl7.org/CodeSystem/v3-ActCode', code: 'AMB' },
        subject: { reference: `Patient/${patientId}` },
        serviceProvider: { reference: `Organization/org-${n}` },
      });
    }
    for (const id of ['proc-a', 'proc-b', 'proc-c']) {
      resources.push({
        resourceType: 'Procedure',
        id,
        status: 'completed',
        subject: { reference: `Patient/${patientId}` },
      });
    }
    const asBob = bearer(bob.access_token);
    for (let at = 0; at < resources.length; at += 20) {
      const bundle = {
        resourceType: 'Bundle',
        type: 'transaction',
        entry: resources.slice(at, at + 20).map(entry),
      };
      await request(t.server).post('/r4').set(asBob).send(bundle).expect(200);
    }
    const path = `/r4/Patient/${patientId}/$everything`;
    const key = (r: any) => `${r.resourceType}/${r.id}`;
    const walkAsBob = async (first: string) => {
      const found: any[] = [];
      let url: string | undefined = first;
      while (url) {
        const res = await get(url, asBob).expect(200);
        found.push(...res.body.entry.map((e: any) => e.resource));
        url = next(res.body);
      }
      return found;
    };
    const all = await walkAsBob(`${path}?_count=100`);
    const whole = all.map(key);
    expectEverythingOrder(all, patientId);
    expect(whole.filter((k) => !k.startsWith('Provenance/')).sort()).toEqual(resources.map(key).sort());
    expect((await walkAsBob(`${path}?_count=7`)).map(key)).toEqual(whole);
    // the Organizations last, in id order
    const organizations = resources
      .filter((r) => r.resourceType === 'Organization')
      .map(key)
      .sort();
    expect(whole.slice(-205)).toEqual(organizations);
    // the Procedures after the Encounters
    expect(whole.indexOf('Procedure/proc-a')).toBeGreaterThan(whole.lastIndexOf(`Encounter/enc-000`));
    const page = await get(`${path}?_skip=${whole.length - 206}&_count=3`, asBob).expect(200);
    expect(page.body.entry.map((e: any) => key(e.resource))).toEqual(whole.slice(-206, -203));
    expect(page.body.total).toBe(whole.length);
  }, 120_000);

  it('_type, _count, _since, start/end', async () => {
    const record = records[0];
    const path = `/r4/Patient/${record.patientId}/$everything`;
    const observations = resourcesOfType([record], 'Observation');
    const onlyObservations = await walk(`${path}?_type=Observation&_count=7`);
    expect(onlyObservations.map((r) => r.id).sort()).toEqual(observations.map((r) => r.id).sort());
    const page = await get(`${path}?_count=3`).expect(200);
    expect(page.body.entry).toHaveLength(3);
    expect((await get(`${path}?_since=2999-01-01`).expect(200)).body.total).toBe(0);
    const first = observations
      .map((o) => o.effectiveDateTime as string)
      .sort((a, b) => Date.parse(a) - Date.parse(b))[0];
    const year = new Date(first).getUTCFullYear();
    const early = await walk(`${path}?_type=Observation&end=${year}`);
    const expected = observations.filter((o) => new Date(o.effectiveDateTime).getUTCFullYear() <= year);
    expect(early.map((r) => r.id).sort()).toEqual(expected.map((o) => o.id).sort());
    const late = await walk(`${path}?_type=Observation,Practitioner&start=${year + 1}`);
    expect(late.filter((r) => r.resourceType === 'Practitioner').length).toBeGreaterThan(0); // no care date: stays
    expect(
      late
        .filter((r) => r.resourceType === 'Observation')
        .map((r) => r.id)
        .sort(),
    ).toEqual(
      observations
        .filter((o) => new Date(o.effectiveDateTime).getUTCFullYear() > year)
        .map((o) => o.id)
        .sort(),
    );
  });

  it('a first page is two queries: its compartment resources in index order with their JSON, and the Patient by key', async () => {
    const [record] = records;
    const path = `/r4/Patient/${record.patientId}/$everything`;
    let first: any;
    const queries = await recordQueries(t.connection, async () => {
      first = (await get(path).expect(200)).body;
    });
    expect(queries.filter((q) => q.collection === 'resources').map((q) => q.summary)).toHaveLength(2);
    // the same entries as the first page of a walk with pages of one (each read by key)
    const ones: string[] = [];
    for (let skip = 0; skip < 10; skip++) {
      const page = (await get(`${path}?_count=1&_skip=${skip}`).expect(200)).body;
      ones.push(...page.entry.map((e: any) => JSON.stringify(e.resource)));
    }
    expect(first.entry.map((e: any) => JSON.stringify(e.resource))).toEqual(ones);
  });

  it('type level: every Patient and its compartment by type then id, then what they reference; a first page reads its rows only', async () => {
    const key = (r: any) => `${r.resourceType}/${r.id}`;
    const path = '/r4/Patient/$everything';
    const whole = await walk(`${path}?_count=100`);
    const keys = whole.map(key);
    expect(new Set(keys).size).toBe(keys.length);
    for (const record of records)
      expect(keys).toEqual(expect.arrayContaining(record.resources.map((r) => `${r.resourceType}/${r.id}`)));
    // the compartments (Patients among them) by type then id, then the resources outside them
    const compartmentTypes = new Set(compartmentTypesOf('r4'));
    const outsideAt = whole.findIndex((r) => !compartmentTypes.has(r.resourceType));
    expect(outsideAt).toBeGreaterThan(0);
    const byTypeThenId = (rows: any[]) =>
      [...rows].sort((a, b) =>
        a.resourceType !== b.resourceType
          ? a.resourceType < b.resourceType
            ? -1
            : 1
          : a.id < b.id
            ? -1
            : a.id > b.id
              ? 1
              : 0,
      );
    const compartment = whole.slice(0, outsideAt);
    const outside = whole.slice(outsideAt);
    expect(compartment.map(key)).toEqual(byTypeThenId(compartment).map(key));
    expect(outside.map(key)).toEqual(byTypeThenId(outside).map(key));
    for (const r of outside) expect(compartmentTypes.has(r.resourceType)).toBe(false);
    expect(outside.some((r) => r.resourceType === 'Practitioner')).toBe(true);
    // pages of any size walk the same sequence, and the page across the compartment's end has the total
    expect((await walk(`${path}?_count=7`)).map(key)).toEqual(keys);
    const across = await get(`${path}?_count=4&_skip=${outsideAt - 2}`).expect(200);
    expect(across.body.entry.map((e: any) => key(e.resource))).toEqual(
      keys.slice(outsideAt - 2, outsideAt + 2),
    );
    expect(across.body.total).toBe(keys.length);
    // a first page short of the end: one query of its rows, no pass over the compartments, no total
    let first: any;
    const queries = await recordQueries(t.connection, async () => {
      first = (await get(path).expect(200)).body;
    });
    expect(queries.filter((q) => q.collection === 'resources')).toHaveLength(1);
    expect(first.total).toBeUndefined();
    expect(first.entry.map((e: any) => key(e.resource))).toEqual(keys.slice(0, 10));
    expect((await get(`${path}?_total=accurate`).expect(200)).body.total).toBe(keys.length);
    // `_type` of outside resources only: the compartments serve nothing, the page is the pass's
    const practitioners = await walk(`${path}?_type=Practitioner&_count=3`);
    expect(practitioners.map(key)).toEqual(outside.filter((r) => r.resourceType === 'Practitioner').map(key));
    // `_since` after everything: nothing, total 0
    const later = (await get(`${path}?_since=2999-01-01`).expect(200)).body;
    expect(later.entry ?? []).toEqual([]);
    expect(later.total).toBe(0);
    // another user's patients are not there
    const bobs = (await get(`${path}?_count=100`, bearer(bob.access_token)).expect(200)).body;
    expect((bobs.entry ?? []).filter((e: any) => keys.includes(key(e.resource)))).toEqual([]);
  });

  it('bad parameters are 400, an unknown or foreign patient 404', async () => {
    const path = `/r4/Patient/${records[0].patientId}/$everything`;
    await get(`${path}?start=not-a-date`).expect(400);
    await get(`${path}?_type=Nonsense`).expect(400);
    await get(`${path}?_count=abc`).expect(400);
    await get('/r4/Patient/no-such-patient/$everything').expect(404);
    await get(path, bearer(bob.access_token)).expect(404);
    await request(t.server).delete(path).set(bearer(bob.access_token)).expect(404);
  });

  it('DELETE removes the patient and its compartment for good, with counts per type; shared resources stay', async () => {
    const [record, other] = records;
    const path = `/r4/Patient/${record.patientId}/$everything`;
    const before = await walk(`${path}?_count=100`);
    const res = await request(t.server).delete(path).set(asAlice()).expect(200);
    expect(res.body.resourceType).toBe('OperationOutcome');
    const counts = new Map<string, number>();
    for (const issue of res.body.issue.slice(1)) {
      const [type, n] = String(issue.diagnostics).split(': ');
      counts.set(type, Number(n));
    }
    const observations = resourcesOfType([record], 'Observation');
    expect(counts.get('Observation')).toBe(observations.length);
    expect(counts.get('Patient')).toBe(1);
    // The record was loaded in bundles, one Provenance each: those listing only removed resources
    // went with them (at least one: most bundles hold only the patient's own data).
    expect(counts.get('Provenance')).toBeGreaterThan(0);
    await get(`/r4/Patient/${record.patientId}`).expect(404);
    await get(`/r4/Observation/${observations[0].id}`).expect(404);
    await get(`/r4/Observation/${observations[0].id}/_history/1`).expect(404);
    expect((await get(`/r4/Observation?subject=Patient/${record.patientId}`).expect(200)).body.total).toBe(0);
    expect(
      (await get(`/r4/Provenance?target=Observation/${observations[0].id}`).expect(200)).body.total,
    ).toBe(0);
    const practitioner = record.resources.find((r) => r.resourceType === 'Practitioner')!;
    await get(`/r4/Practitioner/${practitioner.id}`).expect(200);
    // Provenances of bundles that also wrote shared resources stay for those, and name nothing removed.
    expect(
      (await get(`/r4/Provenance?target=Practitioner/${practitioner.id}`).expect(200)).body.total,
    ).toBeGreaterThan(0);
    const removed = new Set(
      before
        .filter((r) => !['Practitioner', 'Organization', 'Provenance'].includes(r.resourceType))
        .map((r) => `${r.resourceType}/${r.id}`),
    );
    const named = (await walk('/r4/Provenance?_count=100')).flatMap((p: any) =>
      p.target.map((target: any) => String(target.reference).split('/_history/')[0]),
    );
    expect(named.length).toBeGreaterThan(0);
    expect(named.filter((reference) => removed.has(reference))).toEqual([]);
    const otherObservations = other.resources.filter((r) => r.resourceType === 'Observation');
    expect(
      (await get(`/r4/Observation?subject=Patient/${other.patientId}&_summary=count`).expect(200)).body.total,
    ).toBe(otherObservations.length);
    await request(t.server).delete(path).set(asAlice()).expect(404);
    expect(entryIds((await get(`/r4/Patient?_id=${record.patientId}`).expect(200)).body)).toEqual([]);
  });
});
