import { randomBytes } from 'crypto';
import request from 'supertest';
import {
  bearer,
  clientHeaders,
  createClient,
  createTestApp,
  createUser,
  expectOutcome,
  createSmartApp,
  IDENTITY_TEST_ENV,
  launchToken,
  type TestApp,
  type TestClient,
  type TestUser,
} from '@app/testing';
import type { IssuedSmartApp } from '../src/modules/auth/clients/clients.service';

/**
 * SMART App Launch scopes on every FHIR interaction (docs/api.md §2 "SMART scopes"): tokens as a
 * member's launch grant yields them (claims `scope` and `smart`), against the real app and database.
 * The member's record holds two Patients (the launch's and a relative's); another member and the
 * app's own tenant hold their own data.
 */
describe('SMART scopes (e2e)', () => {
  let t: TestApp;
  let plan: TestClient;
  let member: TestUser;
  let otherMember: TestUser;
  const suffix = randomBytes(4).toString('hex');
  const id = (name: string) => `${name}-${suffix}`;
  const LAB = 'http://terminology.hl7.org/CodeSystem/observation-category|laboratory';
  const [me, relative, stranger, appsOwn] = ['me', 'relative', 'stranger', 'apps-own'].map(id);
  const practitioner = id('doc');
  const obs = {
    myLab: id('my-lab'),
    myVitals: id('my-vitals'),
    relativeLab: id('relative-lab'),
    strangerLab: id('stranger-lab'),
  };
  const condition = id('my-condition');

  const observation = (oid: string, patient: string, category: 'laboratory' | 'vital-signs') => ({
    resourceType: 'Observation',
    id: oid,
    status: 'final',
    category: [
      {
        coding: [{ system: 'http://terminology.hl7.org/CodeSystem/observation-category', code: category }],
      },
    ],
    code: { text: `${category} test` },
    subject: { reference: `Patient/${patient}` },
    performer: [{ reference: `Practitioner/${practitioner}` }],
  });
  const patient = (pid: string) => ({ resourceType: 'Patient', id: pid, name: [{ family: pid }] });

  async function put(headers: Record<string, string>, resource: { resourceType: string; id: string }) {
    await request(t.server)
      .put(`/r4/${resource.resourceType}/${resource.id}`)
      .set(headers)
      .send(resource)
      .expect((res) => expect([200, 201]).toContain(res.status));
  }

  let app: IssuedSmartApp;
  const token = async (scope: string, launchPatient: string | null = me) =>
    bearer(
      await launchToken(t, plan, app, member, {
        scope,
        ...(launchPatient === null ? {} : { patient: launchPatient }),
      }),
    );
  const get = (path: string, headers: Record<string, string>) => request(t.server).get(path).set(headers);
  const ids = (bundle: { entry?: Array<{ resource: { resourceType: string; id: string } }> }) =>
    (bundle.entry ?? []).map((e) => `${e.resource.resourceType}/${e.resource.id}`).sort();

  beforeAll(async () => {
    t = await createTestApp(IDENTITY_TEST_ENV);
    plan = await createClient(t, { name: 'health plan' });
    [member, otherMember] = await Promise.all([createUser(t, plan), createUser(t, plan)]);
    const asMember = clientHeaders(plan, member.service_user_id);
    await put(asMember, { resourceType: 'Practitioner', id: practitioner });
    for (const pid of [me, relative]) await put(asMember, patient(pid));
    await put(asMember, observation(obs.myLab, me, 'laboratory'));
    await put(asMember, observation(obs.myVitals, me, 'vital-signs'));
    await put(asMember, observation(obs.relativeLab, relative, 'laboratory'));
    await put(asMember, {
      resourceType: 'Condition',
      id: condition,
      subject: { reference: `Patient/${me}` },
    } as never);
    const asOther = clientHeaders(plan, otherMember.service_user_id);
    await put(asOther, patient(stranger));
    await put(asOther, observation(obs.strangerLab, stranger, 'laboratory'));
    // the app is a client of its own: what it stores there is never what its launch token reads
    app = await createSmartApp(t, plan, { confidential: true });
    const appUser = await createUser(t, app as unknown as TestClient);
    await put(clientHeaders(app as unknown as TestClient, appUser.service_user_id), patient(appsOwn));
  }, 120_000);
  afterAll(async () => t?.close());

  describe('patient/*.rs (v2) and patient/*.read (v1)', () => {
    for (const scope of ['launch/patient openid fhirUser patient/*.rs', 'launch/patient patient/*.read']) {
      it(`${scope}: reads the launch patient's compartment only`, async () => {
        const auth = await token(scope);
        await get(`/r4/Patient/${me}`, auth).expect(200);
        await get(`/r4/Observation/${obs.myLab}`, auth).expect(200);
        for (const hidden of [
          `Patient/${relative}`,
          `Observation/${obs.relativeLab}`,
          `Patient/${stranger}`,
          `Observation/${obs.strangerLab}`,
          `Patient/${appsOwn}`,
          `Practitioner/${practitioner}`,
        ]) {
          const res = await get(`/r4/${hidden}`, auth);
          expect(res.status).toBe(404);
          expectOutcome(res, 'not-found');
        }
        const search = await get('/r4/Observation?_count=1', auth).expect(200);
        // the total is counted in the database with the compartment: paging stays right
        expect(search.body.total).toBe(2);
        expect(search.body.entry).toHaveLength(1);
        const all = await get('/r4/Observation?_count=50', auth).expect(200);
        expect(ids(all.body)).toEqual([`Observation/${obs.myLab}`, `Observation/${obs.myVitals}`].sort());
      });
    }

    it('a compartment search of another patient finds no such patient', async () => {
      const auth = await token('patient/*.rs');
      const mine = await get(`/r4/Patient/${me}/Observation`, auth).expect(200);
      expect(mine.body.total).toBe(2);
      const theirs = await get(`/r4/Patient/${relative}/Observation`, auth);
      expect(theirs.status).toBe(404);
      expectOutcome(theirs, 'not-found');
    });

    it('_include and _revinclude do not leak what lies outside the compartment', async () => {
      const auth = await token('patient/*.rs');
      const included = await get('/r4/Observation?_include=Observation:performer&_count=50', auth).expect(
        200,
      );
      expect(ids(included.body)).not.toContain(`Practitioner/${practitioner}`);
      const revincluded = await get('/r4/Patient?_revinclude=Observation:subject&_count=50', auth).expect(
        200,
      );
      expect(ids(revincluded.body)).toEqual(
        [`Patient/${me}`, `Observation/${obs.myLab}`, `Observation/${obs.myVitals}`].sort(),
      );
      const system = await get('/r4?_type=Patient,Observation&_count=50', auth).expect(200);
      expect(system.body.total).toBe(3);
    });

    it('$everything holds the launch patient only; another patient is not found', async () => {
      const auth = await token('patient/*.rs');
      const everything = await get(`/r4/Patient/${me}/$everything?_count=100`, auth).expect(200);
      const found = ids(everything.body);
      expect(found).toEqual(
        expect.arrayContaining([`Patient/${me}`, `Observation/${obs.myLab}`, `Condition/${condition}`]),
      );
      for (const hidden of [
        `Patient/${relative}`,
        `Observation/${obs.relativeLab}`,
        `Practitioner/${practitioner}`,
      ])
        expect(found).not.toContain(hidden);
      const other = await get(`/r4/Patient/${relative}/$everything`, auth);
      expect(other.status).toBe(404);
      expectOutcome(other, 'not-found');
    });

    it('history across resources shows none of the compartment; a resource of it reads its current version', async () => {
      const auth = await token('patient/*.rs');
      const typeHistory = await get('/r4/Observation/_history', auth).expect(200);
      expect(typeHistory.body.total).toBe(0);
      const instance = await get(`/r4/Observation/${obs.myLab}/_history`, auth).expect(200);
      expect(ids(instance.body)).toEqual([`Observation/${obs.myLab}`]);
      await get(`/r4/Observation/${obs.relativeLab}/_history`, auth).expect(404);
      await get(`/r4/Observation/${obs.myLab}/_history/1`, auth).expect(200);
      await get(`/r4/Observation/${obs.relativeLab}/_history/1`, auth).expect(404);
    });

    it('refuses every write with 403 forbidden', async () => {
      const auth = await token('patient/*.rs');
      const writes = [
        request(t.server)
          .post('/r4/Observation')
          .set(auth)
          .send(observation('x', me, 'laboratory')),
        request(t.server).put(`/r4/Patient/${me}`).set(auth).send(patient(me)),
        request(t.server).delete(`/r4/Observation/${obs.myLab}`).set(auth),
        request(t.server)
          .patch(`/r4/Patient/${me}`)
          .set({ ...auth, 'Content-Type': 'application/json-patch+json' })
          .send(JSON.stringify([{ op: 'add', path: '/active', value: true }])),
        request(t.server).delete('/r4/purge').set(auth),
      ];
      for (const res of await Promise.all(writes)) {
        expect(res.status).toBe(403);
        expectOutcome(res, 'forbidden');
      }
      await get(`/r4/Patient/${me}`, auth).expect(200);
    });

    it('$export needs a user/ or system/ scope over every type', async () => {
      const res = await get('/r4/$export', { ...(await token('patient/*.rs')), Prefer: 'respond-async' });
      expect(res.status).toBe(403);
      expectOutcome(res, 'forbidden');
    });

    it('a patient scope without a launch patient reads nothing', async () => {
      const res = await get('/r4/Observation', await token('patient/*.rs', null));
      expect(res.status).toBe(403);
      expectOutcome(res, 'forbidden');
    });
  });

  describe('type-specific scopes', () => {
    for (const scope of ['patient/Observation.rs', 'patient/Observation.read']) {
      it(`${scope}: Observations of the patient; other types 403, left out of multi-type results`, async () => {
        const auth = await token(`launch/patient ${scope}`);
        await get(`/r4/Observation/${obs.myLab}`, auth).expect(200);
        for (const path of [`/r4/Patient/${me}`, '/r4/Condition', `/r4/Patient/${me}/Condition`]) {
          const res = await get(path, auth);
          expect(res.status).toBe(403);
          expectOutcome(res, 'forbidden');
        }
        const system = await get('/r4?_type=Patient,Observation,Condition&_count=50', auth).expect(200);
        expect(ids(system.body)).toEqual([`Observation/${obs.myLab}`, `Observation/${obs.myVitals}`].sort());
      });
    }

    it('a v2 .s scope searches but does not read by id', async () => {
      const auth = await token('patient/Observation.s');
      const search = await get('/r4/Observation', auth).expect(200);
      expect(search.body.total).toBe(2);
      const res = await get(`/r4/Observation/${obs.myLab}`, auth);
      expect(res.status).toBe(403);
    });

    it('a category scope reads only that category', async () => {
      const auth = await token(`patient/Observation.rs?category=${LAB}`);
      const search = await get('/r4/Observation?_count=50', auth).expect(200);
      expect(ids(search.body)).toEqual([`Observation/${obs.myLab}`]);
      await get(`/r4/Observation/${obs.myLab}`, auth).expect(200);
      await get(`/r4/Observation/${obs.myVitals}`, auth).expect(404);
      // the same with user/ covers the whole member record, still that category only
      const user = await get(
        '/r4/Observation?_count=50',
        await token(`user/Observation.rs?category=${LAB}`),
      ).expect(200);
      expect(ids(user.body)).toEqual([`Observation/${obs.myLab}`, `Observation/${obs.relativeLab}`].sort());
    });
  });

  describe('writes', () => {
    it('patient/Observation.cruds writes within the compartment only', async () => {
      const auth = await token('patient/Observation.cruds patient/Patient.rs');
      const created = await request(t.server)
        .post('/r4/Observation')
        .set(auth)
        .send({ ...observation('ignored', me, 'laboratory'), id: undefined })
        .expect(201);
      const newId = created.body.id as string;
      const forRelative = await request(t.server)
        .post('/r4/Observation')
        .set(auth)
        .send({ ...observation('ignored', relative, 'laboratory'), id: undefined });
      expect(forRelative.status).toBe(403);
      expectOutcome(forRelative, 'forbidden');
      // moving one's own Observation to another patient is a write outside the compartment too
      const moved = await request(t.server)
        .put(`/r4/Observation/${newId}`)
        .set(auth)
        .send(observation(newId, relative, 'laboratory'));
      expect(moved.status).toBe(403);
      // another patient's Observation: not writable, whatever its id says
      const overwrite = await request(t.server)
        .put(`/r4/Observation/${obs.relativeLab}`)
        .set(auth)
        .send(observation(obs.relativeLab, me, 'laboratory'));
      expect(overwrite.status).toBe(403);
      expect((await request(t.server).delete(`/r4/Observation/${obs.relativeLab}`).set(auth)).status).toBe(
        404,
      );
      const asMember = clientHeaders(plan, member.service_user_id);
      const untouched = await get(`/r4/Observation/${obs.relativeLab}`, asMember).expect(200);
      expect(untouched.body.subject.reference).toBe(`Patient/${relative}`);
      await request(t.server).delete(`/r4/Observation/${newId}`).set(auth).expect(200);
      const conditionWrite = await request(t.server)
        .post('/r4/Condition')
        .set(auth)
        .send({ resourceType: 'Condition', subject: { reference: `Patient/${me}` } });
      expect(conditionWrite.status).toBe(403);
    });

    it('user/Observation.write (v1) writes Observations of the whole member record, nothing else', async () => {
      const auth = await token('user/Observation.write user/*.rs');
      const res = await request(t.server)
        .post('/r4/Observation')
        .set(auth)
        .send({ ...observation('x', relative, 'vital-signs'), id: undefined })
        .expect(201);
      await request(t.server).delete(`/r4/Observation/${res.body.id}`).set(auth).expect(200);
      const other = await request(t.server).post('/r4/Patient').set(auth).send(patient('x'));
      expect(other.status).toBe(403);
    });

    it('a category scope writes that category only', async () => {
      const auth = await token(`patient/Observation.cruds?category=${LAB}`);
      await request(t.server)
        .post('/r4/Observation')
        .set(auth)
        .send({ ...observation('x', me, 'laboratory'), id: undefined })
        .expect(201);
      const vitals = await request(t.server)
        .post('/r4/Observation')
        .set(auth)
        .send({ ...observation('x', me, 'vital-signs'), id: undefined });
      expect(vitals.status).toBe(403);
    });

    it('user/*.* from a launch keeps full access to the member record (and no other)', async () => {
      const auth = await token('user/*.*');
      await get(`/r4/Patient/${relative}`, auth).expect(200);
      await get(`/r4/Patient/${stranger}`, auth).expect(404);
      await get(`/r4/Patient/${appsOwn}`, auth).expect(404);
    });
  });

  it('batch and transaction entries are each held to the scopes', async () => {
    const auth = await token('patient/*.rs patient/Observation.c');
    const res = await request(t.server)
      .post('/r4')
      .set(auth)
      .send({
        resourceType: 'Bundle',
        type: 'batch',
        entry: [
          { request: { method: 'GET', url: `Patient/${relative}` } },
          { request: { method: 'GET', url: 'Observation?_count=50' } },
          { request: { method: 'POST', url: 'Observation' }, resource: observation('a', me, 'laboratory') },
          {
            request: { method: 'POST', url: 'Observation' },
            resource: observation('b', relative, 'laboratory'),
          },
          { request: { method: 'POST', url: 'Condition' }, resource: { resourceType: 'Condition' } },
          { request: { method: 'DELETE', url: `Observation/${obs.myLab}` } },
          { request: { method: 'GET', url: `Observation/${obs.relativeLab}` } },
        ],
      })
      .expect(200);
    const statuses = res.body.entry.map((e: { response: { status: string } }) =>
      e.response.status.slice(0, 3),
    );
    expect(statuses).toEqual(['404', '200', '201', '403', '403', '403', '404']);
    const searched = res.body.entry[1].resource;
    expect(ids(searched)).not.toContain(`Observation/${obs.relativeLab}`);
    const transaction = await request(t.server)
      .post('/r4')
      .set(auth)
      .send({
        resourceType: 'Bundle',
        type: 'transaction',
        entry: [{ request: { method: 'POST', url: 'Condition' }, resource: { resourceType: 'Condition' } }],
      })
      .expect(200);
    expect(transaction.body.entry[0].response.status).toMatch(/^403/);
    expect(transaction.body.entry[0].response.outcome.issue[0].code).toBe('forbidden');
  });

  it('pre-SMART credentials keep full access to the member record', async () => {
    for (const headers of [bearer(member.access_token), clientHeaders(plan, member.service_user_id)]) {
      await get(`/r4/Patient/${relative}`, headers).expect(200);
      await get(`/r4/Practitioner/${practitioner}`, headers).expect(200);
      const history = await get('/r4/Observation/_history', headers).expect(200);
      expect(history.body.total).toBeGreaterThanOrEqual(3);
    }
  });

  describe('a scope on a parameter stored as the union of others', () => {
    it('combo-code reads the Observations with that code or component code', async () => {
      const asMember = clientHeaders(plan, member.service_user_id);
      const pressure = id('my-pressure');
      await put(asMember, {
        ...observation(pressure, me, 'vital-signs'),
        component: [{ code: { coding: [{ system: 'http://loinc.org', code: '8480-6' }] } }],
      } as never);
      const auth = await token('patient/Observation.rs?combo-code=http://loinc.org|8480-6');
      const search = await get('/r4/Observation?_count=50', auth).expect(200);
      expect(ids(search.body)).toEqual([`Observation/${pressure}`]);
      await get(`/r4/Observation/${obs.myVitals}`, auth).expect(404);
    });
  });
});
