import { randomBytes } from 'crypto';
import request from 'supertest';
import {
  bearer,
  clientHeaders,
  clientToken,
  createClient,
  createTestApp,
  createUser,
  IDENTITY_TEST_ENV,
  TestApp,
  TestClient,
  TestUser,
  linkPath,
} from '@app/testing';
import { signFileToken, verifyFileToken } from '../src/modules/bulk-export/export-file-token';
import { EXPORT_SIGNING_KEY } from '../src/modules/bulk-export/export-signing-key';

type Headers = Record<string, string>;
type Json = Record<string, any>;
interface Manifest {
  transactionTime: string;
  request: string;
  requiresAccessToken: boolean;
  output: Array<{ type: string; url: string; count: number }>;
  error: unknown[];
}

/** docs/api.md §10: synchronous $export manifests and their NDJSON files, on every variant. */
describe('bulk export (e2e)', () => {
  let t: TestApp;
  let acme: TestClient;
  let other: TestClient;
  let a1: TestUser;
  let a2: TestUser;
  let b1: TestUser;
  const customer = `acme-${randomBytes(3).toString('hex')}`;
  const ids = { pa1: 'pa1', pa1b: 'pa1b', pa2: 'pa2', pb: 'pb' };

  const local = linkPath;

  async function create(headers: Headers, resource: Json): Promise<Json> {
    const res = await request(t.server)
      .put(`/r4/${resource.resourceType}/${resource.id}`)
      .set(headers)
      .set('Content-Type', 'application/fhir+json')
      .send(JSON.stringify(resource));
    if (res.status >= 300) throw new Error(`create failed: ${res.status} ${JSON.stringify(res.body)}`);
    return res.body;
  }

  const observation = (id: string, patient: string): Json => ({
    resourceType: 'Observation',
    id,
    status: 'final',
    code: { coding: [{ system: 'http://loinc.org', code: '8867-4' }] },
    subject: { reference: `Patient/${patient}` },
    valueQuantity: { value: 70, unit: '/min' },
  });

  async function manifest(path: string, headers: Headers, status = 200): Promise<Manifest> {
    const res = await request(t.server).get(path).set(headers);
    if (res.status !== status) throw new Error(`${path}: ${res.status} ${JSON.stringify(res.body)}`);
    return res.body as Manifest;
  }

  async function download(url: string, headers: Headers): Promise<string> {
    const res = await request(t.server)
      .get(local(url))
      .set(headers)
      .buffer(true)
      .parse((r, cb) => {
        let text = '';
        r.on('data', (c: Buffer) => (text += c.toString('utf8')));
        r.on('end', () => cb(null, text));
      });
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toMatch(/^application\/fhir\+ndjson/);
    return res.body as string;
  }

  const parseNdjson = (text: string): Json[] =>
    text
      .split('\n')
      .filter((line) => line !== '')
      .map((line) => JSON.parse(line) as Json);

  /** Every resource of a manifest, by type, checking each file holds one type and its count. */
  async function downloadAll(m: Manifest, headers: Headers): Promise<Record<string, Json[]>> {
    const byType: Record<string, Json[]> = {};
    for (const file of m.output) {
      const resources = parseNdjson(await download(file.url, headers));
      expect(resources.every((r) => r.resourceType === file.type)).toBe(true);
      expect(resources).toHaveLength(file.count);
      (byType[file.type] ??= []).push(...resources);
    }
    return byType;
  }

  const keysOf = (resources: Json[] = []) => resources.map((r) => `${r.resourceType}/${r.id}`).sort();

  async function searchAll(type: string, headers: Headers): Promise<Json[]> {
    const res = await request(t.server).get(`/r4/${type}?_count=1000`).set(headers).expect(200);
    return (res.body.entry ?? []).map((e: Json) => e.resource as Json);
  }

  beforeAll(async () => {
    t = await createTestApp({ ...IDENTITY_TEST_ENV, EXPORT_FILE_MAX_RESOURCES: '2' });
    acme = await createClient(t, { customer, programs: ['provider-access', 'p2p'] });
    other = await createClient(t, { customer: `other-${customer}` });
    [a1, a2] = [await createUser(t, acme), await createUser(t, acme)];
    b1 = await createUser(t, other);
    const A1 = bearer(a1.access_token);
    await create(A1, { resourceType: 'Patient', id: ids.pa1, name: [{ family: 'One' }] });
    await create(A1, { resourceType: 'Patient', id: ids.pa1b, name: [{ family: 'OneB' }] });
    for (let i = 1; i <= 5; i += 1) await create(A1, observation(`o1-${i}`, ids.pa1));
    await create(A1, observation('o1b-1', ids.pa1b));
    await create(A1, {
      resourceType: 'Condition',
      id: 'c1',
      subject: { reference: `Patient/${ids.pa1}` },
      code: { text: 'asthma' },
    });
    const A2 = bearer(a2.access_token);
    await create(A2, { resourceType: 'Patient', id: ids.pa2 });
    await create(A2, observation('o2-1', ids.pa2));
    await create(A2, observation('o2-2', ids.pa2));
    const B1 = bearer(b1.access_token);
    await create(B1, { resourceType: 'Patient', id: ids.pb });
    await create(B1, observation('ob-1', ids.pb));
  }, 120_000);
  afterAll(async () => t?.close());

  it('user token: a manifest of the user data, split at the per-file limit, equal to a search (round trip)', async () => {
    const A1 = bearer(a1.access_token);
    const m = await manifest('/bulk-data/r4/$export', A1);
    expect(m.requiresAccessToken).toBe(true);
    expect(m.error).toEqual([]);
    expect(Date.parse(m.transactionTime)).toBeLessThanOrEqual(Date.now());
    expect(m.request).toBe(`${t.settings.urls.analytics}/bulk-data/r4/$export`);
    for (const file of m.output) {
      expect(file.url).toMatch(
        new RegExp(
          `^${t.settings.urls.analytics}/bulk-data/r4/\\$export/${file.type}/[A-Za-z0-9_.-]+\\.ndjson$`,
        ),
      );
      expect(file.count).toBeLessThanOrEqual(2);
    }
    // 6 Observations at 2 per file: 3 files, disjoint, in key order.
    expect(m.output.filter((f) => f.type === 'Observation').map((f) => f.count)).toEqual([2, 2, 2]);
    const types = [...new Set(m.output.map((f) => f.type))].sort();
    expect(types).toEqual(expect.arrayContaining(['Condition', 'Observation', 'Patient']));
    const exported = await downloadAll(m, A1);
    for (const type of types) {
      expect(keysOf(exported[type])).toEqual(keysOf(await searchAll(type, A1)));
      expect(new Set(keysOf(exported[type])).size).toBe(exported[type].length);
    }
    // Exactly as served: the stored JSON, meta included.
    const patient = exported.Patient.find((p) => p.id === ids.pa1)!;
    const read = await request(t.server).get(`/r4/Patient/${ids.pa1}`).set(A1).expect(200);
    expect(patient).toEqual(read.body);
  });

  it('downloading a file twice gives the same bytes', async () => {
    const A1 = bearer(a1.access_token);
    const m = await manifest('/bulk-data/r4/$export?_type=Observation', A1);
    for (const file of m.output) expect(await download(file.url, A1)).toBe(await download(file.url, A1));
  });

  it('client headers: one user by id, or every user of the client with "client"', async () => {
    const one = await manifest(
      '/bulk-data/r4/$export?_type=Patient',
      clientHeaders(acme, a2.service_user_id),
    );
    expect(keysOf((await downloadAll(one, clientHeaders(acme, a2.service_user_id))).Patient)).toEqual([
      `Patient/${ids.pa2}`,
    ]);
    const all = await manifest(
      '/bulk-data/r4/$export?_type=Patient,Observation',
      clientHeaders(acme, 'client'),
    );
    const exported = await downloadAll(all, clientHeaders(acme, 'client'));
    expect(keysOf(exported.Patient)).toEqual([
      `Patient/${ids.pa1}`,
      `Patient/${ids.pa1b}`,
      `Patient/${ids.pa2}`,
    ]);
    expect(exported.Observation).toHaveLength(8);
    expect(keysOf(exported.Observation)).not.toContain('Observation/ob-1');
  });

  it('_type selects types; only types with data appear; unknown types → 400 naming them', async () => {
    const A1 = bearer(a1.access_token);
    const m = await manifest('/bulk-data/r4/$export?_type=Condition,AllergyIntolerance', A1);
    expect(m.output.map((f) => f.type)).toEqual(['Condition']);
    const res = await request(t.server)
      .get('/bulk-data/r4/$export?_type=Patient,Foo,MedicationOrder')
      .set(A1);
    expect(res.status).toBe(400);
    expect(res.body.resourceType).toBe('OperationOutcome');
    expect(res.body.issue[0].diagnostics).toContain('Foo, MedicationOrder');
    // DSTU2 knows MedicationOrder
    await manifest('/bulk-data/dstu2/$export?_type=MedicationOrder', A1);
  });

  it('_since: a date or an instant; later changes only; a bad value → 400', async () => {
    const A1 = bearer(a1.access_token);
    const everything = await manifest('/bulk-data/r4/$export?_since=2000-01-01', A1);
    expect(everything.output.length).toBeGreaterThan(0);
    expect((await manifest('/bulk-data/r4/$export?_since=2999-01-01', A1)).output).toEqual([]);
    const before = new Date().toISOString();
    await new Promise((r) => setTimeout(r, 20));
    await create(A1, { ...observation('o1-late', ids.pa1) });
    const m = await manifest(
      `/bulk-data/r4/$export?_type=Observation&_since=${encodeURIComponent(before)}`,
      A1,
    );
    expect(keysOf((await downloadAll(m, A1)).Observation)).toEqual(['Observation/o1-late']);
    for (const bad of ['yesterday', '2021-02-30', '2021-01-01T10:00:00']) {
      const res = await request(t.server).get(`/bulk-data/r4/$export?_since=${bad}`).set(A1);
      expect(res.status).toBe(400);
      expect(res.body.issue[0].diagnostics).toContain('_since');
    }
  });

  it('deleted resources are left out; resources changed after transactionTime are not in the file', async () => {
    const A1 = bearer(a1.access_token);
    await create(A1, observation('o1-doomed', ids.pa1));
    const m = await manifest('/bulk-data/r4/$export?_type=Observation', A1);
    await request(t.server).delete('/r4/Observation/o1-doomed').set(A1).expect(200);
    await create(A1, { ...observation('o1-1', ids.pa1), status: 'amended' });
    const keys = keysOf(
      (await Promise.all(m.output.map(async (f) => parseNdjson(await download(f.url, A1))))).flat(),
    );
    expect(keys).not.toContain('Observation/o1-doomed');
    expect(keys).not.toContain('Observation/o1-1');
    const after = keysOf(
      (await downloadAll(await manifest('/bulk-data/r4/$export?_type=Observation', A1), A1)).Observation,
    );
    expect(after).toContain('Observation/o1-1');
    expect(after).not.toContain('Observation/o1-doomed');
  });

  it('files cut at id prefixes: every resource exactly once (short ids, shared beginnings), none created after the manifest', async () => {
    const user = await createUser(t, acme);
    const U = bearer(user.access_token);
    // at 2 per file: "x" and "xy" are ids equal to a prefix, "xyz…" share more than the 4 characters
    // counted finer (their keys are read), "m" stands alone
    const before = ['x', 'xy', 'xyz-1', 'xyz-2', 'xyz-3', 'xyzw', 'm1', 'x0'];
    for (const id of before) await create(U, { resourceType: 'Basic', id, code: { text: id } });
    const m = await manifest('/bulk-data/r4/$export?_type=Basic', U);
    expect(m.output.every((f) => f.count <= 2)).toBe(true);
    expect(m.output.reduce((n, f) => n + f.count, 0)).toBe(before.length);
    // created after transactionTime: before the first key, between files' keys, past the last key
    for (const id of ['0', 'xyz-15', 'xz', 'zzz'])
      await create(U, { resourceType: 'Basic', id, code: { text: id } });
    const lines = (await Promise.all(m.output.map(async (f) => parseNdjson(await download(f.url, U))))).map(
      (file) => file.map((r) => r.id as string),
    );
    expect(lines.map((ids) => ids.length)).toEqual(m.output.map((f) => f.count));
    expect(lines.flat().sort()).toEqual([...before].sort());
  });

  it('a link signed before prefix cuts (from exclusive, to inclusive) still serves its keys', async () => {
    const A1 = bearer(a1.access_token);
    const m = await manifest('/bulk-data/r4/$export?_type=Observation', A1);
    const url = m.output[0].url;
    const token = url.slice(url.lastIndexOf('/') + 1, -'.ndjson'.length);
    const key = t.app.get<Buffer>(EXPORT_SIGNING_KEY);
    const check = verifyFileToken(key, token);
    if (!check.ok) throw new Error('the manifest link does not verify');
    expect(check.claims.b).toBe('half-open');
    const { b: _bounds, ...claims } = check.claims;
    const keyOf = (id: string) => `r4|${acme.client_id}|Observation|${id}`;
    const legacy = signFileToken(key, { ...claims, from: keyOf('o1-2'), to: keyOf('o1-4') });
    const ids = parseNdjson(await download(url.replace(token, legacy), A1)).map((r) => r.id);
    expect(ids).toEqual(['o1-3', 'o1-4']);
  });

  it('file links: another tenant → 404; a tampered link → 404; an expired link → 401; the wrong type → 404', async () => {
    const A1 = bearer(a1.access_token);
    const m = await manifest('/bulk-data/r4/$export?_type=Patient', A1);
    const url = local(m.output[0].url);
    const notFound = async (path: string, headers: Headers) => {
      const res = await request(t.server).get(path).set(headers);
      expect(res.status).toBe(404);
      expect(res.body.resourceType).toBe('OperationOutcome');
      expect(res.text).not.toContain(ids.pa1);
    };
    await notFound(url, bearer(a2.access_token)); // same client, other user
    await notFound(url, bearer(b1.access_token)); // other client
    await notFound(url, clientHeaders(other, 'client'));
    await request(t.server).get(url).set(clientHeaders(acme, 'client')).expect(200); // the client sees its users
    await request(t.server).get(url).expect(401);
    // tampering: change one character of the payload, or the signature
    const token = url.slice(url.lastIndexOf('/') + 1, -'.ndjson'.length);
    const [payload, sig] = token.split('.');
    const flipped = (s: string, i: number) => s.slice(0, i) + (s[i] === 'A' ? 'B' : 'A') + s.slice(i + 1);
    await notFound(url.replace(token, `${flipped(payload, 10)}.${sig}`), A1);
    await notFound(url.replace(token, `${payload}.${flipped(sig, 5)}`), A1);
    await notFound(url.replace(token, 'not-a-token'), A1);
    await notFound(url.replace('/Patient/', '/Observation/'), A1);
    // a forged payload for user b1 signed with a random key
    const key = t.app.get<Buffer>(EXPORT_SIGNING_KEY);
    const check = verifyFileToken(key, token);
    if (!check.ok) throw new Error('the manifest link does not verify');
    const forged = signFileToken(randomBytes(32), {
      ...check.claims,
      c: other.client_id,
      u: b1.service_user_id,
    });
    await notFound(url.replace(token, forged), bearer(b1.access_token));
    // expired: the same claims, signed by the server key, with exp in the past
    const expired = signFileToken(key, { ...check.claims, exp: Math.floor(Date.now() / 1000) - 1 });
    const res = await request(t.server).get(url.replace(token, expired)).set(A1);
    expect(res.status).toBe(401);
    expect(res.body.issue[0].code).toBe('expired');
  });

  it('x-service-user-id together with a user token → 400', async () => {
    const res = await request(t.server)
      .get('/bulk-data/r4/$export')
      .set({ ...bearer(a1.access_token), 'x-service-user-id': 'client' });
    expect(res.status).toBe(400);
    expect(res.body.resourceType).toBe('OperationOutcome');
  });

  it('unknown FHIR version → 404; no credentials → 401', async () => {
    expect((await request(t.server).get('/bulk-data/r5/$export').set(bearer(a1.access_token))).status).toBe(
      404,
    );
    expect((await request(t.server).get('/bulk-data/r4/$export')).status).toBe(401);
  });

  describe('population export ({gateway_url})', () => {
    const base = () => `/v1/${customer}/bulk-export/bulk-data/r4`;

    it('a client-level token with bulk-data: every user of the client, links on the gateway host', async () => {
      const token = await clientToken(t, acme, { realm: 'dev-portal', scope: 'bulk-data user/*.rs' });
      const m = await manifest(`${base()}/$export?_type=Patient`, bearer(token));
      expect(m.output[0].url.startsWith(`${t.settings.urls.gateway}${base()}/$export/Patient/`)).toBe(true);
      const exported = await downloadAll(m, bearer(token));
      expect(keysOf(exported.Patient)).toEqual([
        `Patient/${ids.pa1}`,
        `Patient/${ids.pa1b}`,
        `Patient/${ids.pa2}`,
      ]);
    });

    it("another customer's path, a user token, client headers or no bulk-data scope → 403", async () => {
      const token = await clientToken(t, acme, { realm: 'dev-portal', scope: 'bulk-data user/*.rs' });
      const forbidden = async (path: string, headers: Headers) => {
        const res = await request(t.server).get(path).set(headers);
        expect(res.status).toBe(403);
        expect(res.body.resourceType).toBe('OperationOutcome');
      };
      await forbidden(`/v1/other-${customer}/bulk-export/bulk-data/r4/$export`, bearer(token));
      await forbidden(`${base()}/$export`, bearer(a1.access_token));
      await forbidden(`${base()}/$export`, clientHeaders(acme, 'client'));
      const narrow = await clientToken(t, acme, { realm: 'dev-portal', scope: 'user/*.rs' });
      await forbidden(`${base()}/$export`, bearer(narrow));
    });

    it('Group: the compartments of its Patient members only; a missing or foreign Group → 404', async () => {
      const A1 = bearer(a1.access_token);
      await create(A1, {
        resourceType: 'Group',
        id: 'g1',
        type: 'person',
        actual: true,
        member: [
          { entity: { reference: `Patient/${ids.pa1b}` } },
          { entity: { reference: `Patient/${ids.pa2}` } },
        ],
      });
      const B1 = bearer(b1.access_token);
      await create(B1, { resourceType: 'Group', id: 'gb', type: 'person', actual: true });
      const token = await clientToken(t, acme, { realm: 'dev-portal', scope: 'bulk-data user/*.rs' });
      const m = await manifest(`${base()}/Group/g1/$export`, bearer(token));
      const exported = await downloadAll(m, bearer(token));
      // pa2 belongs to user a2, but the Group was read client-wide, as the population token sees it.
      expect(keysOf(exported.Patient)).toEqual([`Patient/${ids.pa1b}`, `Patient/${ids.pa2}`]);
      expect(keysOf(exported.Observation)).toEqual([
        'Observation/o1b-1',
        'Observation/o2-1',
        'Observation/o2-2',
      ]);
      expect(exported.Condition).toBeUndefined();
      expect(keysOf(exported.Group)).toEqual(['Group/g1']); // in its members' compartments (Group.member)
      // _type narrows a Group export too
      const onlyPatients = await manifest(`${base()}/Group/g1/$export?_type=Patient`, bearer(token));
      expect(onlyPatients.output.map((f) => f.type)).toEqual(['Patient']);
      // the base-host variant with a user token: that user's part of the Group
      const own = await downloadAll(await manifest('/r4/Group/g1/$export?_type=Observation', A1), A1);
      expect(keysOf(own.Observation)).toEqual(['Observation/o1b-1']);
      for (const path of [`${base()}/Group/nope/$export`, `${base()}/Group/gb/$export`]) {
        const res = await request(t.server).get(path).set(bearer(token));
        expect(res.status).toBe(404);
        expect(res.body.resourceType).toBe('OperationOutcome');
      }
    });

    it('a Group file link stops working when the Group changes', async () => {
      const token = await clientToken(t, acme, { realm: 'dev-portal', scope: 'bulk-data user/*.rs' });
      const m = await manifest(`${base()}/Group/g1/$export?_type=Patient`, bearer(token));
      await create(bearer(a1.access_token), {
        resourceType: 'Group',
        id: 'g1',
        type: 'person',
        actual: true,
        member: [{ entity: { reference: `Patient/${ids.pa1}` } }],
      });
      expect((await request(t.server).get(local(m.output[0].url)).set(bearer(token))).status).toBe(404);
    });
  });

  it('base host: /r4/$export and /r4/Patient/$export (Patient compartment types only)', async () => {
    const A1 = bearer(a1.access_token);
    await create(A1, { resourceType: 'Organization', id: 'org1', name: 'Clinic' });
    const system = await manifest('/r4/$export', A1);
    expect(system.output[0].url.startsWith(`${t.settings.urls.base}/r4/$export/`)).toBe(true);
    const patient = await manifest('/r4/Patient/$export', A1);
    const types = new Set(patient.output.map((f) => f.type));
    expect(types.has('Patient')).toBe(true);
    expect(types.has('Observation')).toBe(true);
    expect(types.has('Organization')).toBe(false); // not in the Patient compartment
    expect(system.output.some((f) => f.type === 'Organization')).toBe(true);
  });

  it('/r4/Patient/$export holds what is in some Patient compartment: Provenances of Patients, not of Observations', async () => {
    const A1 = bearer(a1.access_token);
    await create(A1, { resourceType: 'Observation', id: 'no-subject', status: 'final', code: { text: 'x' } });
    const patientLevel = await downloadAll(
      await manifest('/r4/Patient/$export?_type=Patient,Observation,Provenance', A1),
      A1,
    );
    const system = await downloadAll(await manifest('/r4/$export?_type=Observation,Provenance', A1), A1);
    const targetsPatient = (p: Json) =>
      (p.target as Json[]).some((target) => String(target.reference).startsWith('Patient/'));
    expect(patientLevel.Provenance.length).toBeGreaterThan(0);
    expect(patientLevel.Provenance.every(targetsPatient)).toBe(true);
    expect(keysOf(patientLevel.Provenance)).toEqual(keysOf(system.Provenance.filter(targetsPatient)));
    expect(system.Provenance.length).toBeGreaterThan(patientLevel.Provenance.length);
    expect(keysOf(patientLevel.Observation)).toEqual(keysOf(system.Observation.filter((o) => o.subject)));
    expect(keysOf(system.Observation)).toContain('Observation/no-subject');
    expect(patientLevel.Patient.length).toBeGreaterThan(0);
  });
});
