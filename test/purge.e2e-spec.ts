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

/**
 * DELETE /{v}/purge (docs/api.md §9) against the real app and database: each filter alone and
 * combined, dry-run, tombstones, the per-client rule, bad input (nothing deleted), leftovers of an
 * interrupted removal, and — with a tiny budget — 504 then resumption until done, never leaving a
 * resource half removed.
 */

const FHIR_JSON = 'application/fhir+json';

interface Owner {
  client: TestClient;
  user: TestUser;
}

async function create(t: TestApp, owner: Owner, type: string, body: object, version = 'r4'): Promise<string> {
  const res = await request(t.server)
    .post(`/${version}/${type}`)
    .set(bearer(owner.user.access_token))
    .set('Content-Type', FHIR_JSON)
    .send(JSON.stringify({ resourceType: type, ...body }));
  if (res.status !== 200 && res.status !== 201) throw new Error(`create ${type}: ${res.status} ${res.text}`);
  return res.body.id as string;
}

async function update(t: TestApp, owner: Owner, type: string, id: string, body: object): Promise<void> {
  const res = await request(t.server)
    .put(`/r4/${type}/${id}`)
    .set(bearer(owner.user.access_token))
    .set('Content-Type', FHIR_JSON)
    .send(JSON.stringify({ resourceType: type, id, ...body }));
  if (res.status !== 200 && res.status !== 201) throw new Error(`update ${type}: ${res.status} ${res.text}`);
}

function observation(patientId: string, text = 'heart rate'): object {
  return { status: 'final', code: { text }, subject: { reference: `Patient/${patientId}` } };
}

async function readStatus(
  t: TestApp,
  owner: Owner,
  type: string,
  id: string,
  version = 'r4',
): Promise<number> {
  const res = await request(t.server).get(`/${version}/${type}/${id}`).set(bearer(owner.user.access_token));
  return res.status;
}

/** Stored documents of one user: current resources and history rows, per version. */
async function stored(
  t: TestApp,
  owner: Owner,
  version = 'r4',
): Promise<{ resources: number; history: number }> {
  const filter = { c: owner.client.client_id, u: owner.user.service_user_id, v: version };
  return {
    resources: await t.connection.collection('resources').countDocuments(filter),
    history: await t.connection.collection('resource_history').countDocuments(filter),
  };
}

/** A resource is half removed when history rows outlive its current document, or the reverse. */
async function halfRemoved(t: TestApp, owner: Owner): Promise<string[]> {
  const filter = { c: owner.client.client_id, u: owner.user.service_user_id };
  const current = await t.connection
    .collection('resources')
    .find(filter)
    .project({ _id: 1, vid: 1 })
    .toArray();
  const rows = await t.connection.collection('resource_history').find(filter).project({ rk: 1 }).toArray();
  const rowsByKey = new Map<string, number>();
  for (const row of rows) rowsByKey.set(row.rk as string, (rowsByKey.get(row.rk as string) ?? 0) + 1);
  const problems: string[] = [];
  for (const key of rowsByKey.keys())
    if (!current.some((doc) => doc._id === key)) problems.push(`orphan rows ${key}`);
  for (const doc of current) if (!rowsByKey.has(doc._id)) problems.push(`no history ${doc._id}`);
  return problems;
}

/** `<Type>: <n> resources, <m> versions …` issues → counts per type. */
function countsByType(outcome: any): Record<string, { resources: number; versions: number }> {
  const counts: Record<string, { resources: number; versions: number }> = {};
  for (const issue of outcome.issue.slice(1)) {
    const match = /: (\d+) resources, (\d+) versions/.exec(issue.diagnostics);
    counts[issue.expression[0]] = { resources: Number(match![1]), versions: Number(match![2]) };
  }
  return counts;
}

/** `bundles` transaction Bundles of 20 Observations each (each bundle adds a Provenance too). */
async function load(t: TestApp, who: Owner, bundles: number): Promise<void> {
  for (let b = 0; b < bundles; b++) {
    const entry = Array.from({ length: 20 }, (_, i) => ({
      resource: { resourceType: 'Observation', status: 'final', code: { text: `load ${b}-${i}` } },
      request: { method: 'POST', url: 'Observation' },
    }));
    const res = await request(t.server)
      .post('/r4')
      .set(bearer(who.user.access_token))
      .set('Content-Type', FHIR_JSON)
      .send(JSON.stringify({ resourceType: 'Bundle', type: 'transaction', entry }));
    if (res.status !== 200) throw new Error(`bundle: ${res.status} ${res.text}`);
  }
}

/** Waits until the user's stored counts stop changing (a purge may go on after its client left). */
async function settled(t: TestApp, owner: Owner): Promise<{ resources: number; history: number }> {
  let last = await stored(t, owner);
  for (;;) {
    await new Promise((resolve) => setTimeout(resolve, 300));
    const now = await stored(t, owner);
    if (now.resources === last.resources && now.history === last.history) return now;
    last = now;
  }
}

function purge(t: TestApp, query = '', version = 'r4') {
  return request(t.server).delete(`/${version}/purge${query}`);
}

describe('purge (e2e)', () => {
  jest.setTimeout(60_000);
  let t: TestApp;
  let clientA: TestClient;
  let clientB: TestClient;

  beforeAll(async () => {
    t = await createTestApp(IDENTITY_TEST_ENV);
    clientA = await createClient(t);
    clientB = await createClient(t);
  });
  afterAll(async () => t?.close());

  async function newOwner(client = clientA): Promise<Owner> {
    return { client, user: await createUser(t, client) };
  }

  /** A patient with two observations (one updated to a second version) in R4. */
  async function seedRecord(owner: Owner): Promise<{ patient: string; observations: string[] }> {
    const patient = await create(t, owner, 'Patient', { name: [{ family: 'Purge' }] });
    const first = await create(t, owner, 'Observation', observation(patient));
    const second = await create(t, owner, 'Observation', observation(patient, 'weight'));
    await update(t, owner, 'Observation', first, observation(patient, 'heart rate, corrected'));
    return { patient, observations: [first, second] };
  }

  it('removes everything of the user in that version, with history, and answers counts per type', async () => {
    const owner = await newOwner();
    const neighbour = await newOwner();
    const { patient, observations } = await seedRecord(owner);
    const stu3Patient = await create(t, owner, 'Patient', { gender: 'female' }, 'stu3');
    const neighbourRecord = await seedRecord(neighbour);
    const before = await stored(t, owner);
    const neighbourBefore = await stored(t, neighbour);

    const res = await purge(t, '', 'R4').set(bearer(owner.user.access_token)).expect(200);
    expect(res.headers['content-type']).toContain(FHIR_JSON);
    expect(res.body.resourceType).toBe('OperationOutcome');
    expect(res.body.issue[0]).toMatchObject({ severity: 'information', code: 'informational' });
    const counts = countsByType(res.body);
    expect(counts.Patient).toEqual({ resources: 1, versions: 1 });
    expect(counts.Observation).toEqual({ resources: 2, versions: 3 });
    // every bundle also made a Provenance: an ordinary resource of the user, purged with the rest
    expect(counts.Provenance.resources).toBeGreaterThan(0);
    const total = Object.values(counts).reduce((sum, c) => sum + c.resources, 0);
    const versions = Object.values(counts).reduce((sum, c) => sum + c.versions, 0);
    expect(total).toBe(before.resources);
    expect(versions).toBe(before.history);

    expect(await readStatus(t, owner, 'Patient', patient)).toBe(404);
    for (const id of observations) expect(await readStatus(t, owner, 'Observation', id)).toBe(404);
    const history = await request(t.server)
      .get(`/r4/Observation/${observations[0]}/_history`)
      .set(bearer(owner.user.access_token));
    expect(history.status === 404 || history.body.total === 0).toBe(true);
    expect(await stored(t, owner)).toEqual({ resources: 0, history: 0 });

    // the user stays; the other version and the neighbour are untouched
    expect(await readStatus(t, owner, 'Patient', stu3Patient, 'stu3')).toBe(200);
    expect(await stored(t, neighbour)).toEqual(neighbourBefore);
    expect(await readStatus(t, neighbour, 'Patient', neighbourRecord.patient)).toBe(200);
    await request(t.server).get('/r4/Patient').set(bearer(owner.user.access_token)).expect(200);

    // repeating is harmless: nothing left, 200 with zero counts
    const again = await purge(t).set(bearer(owner.user.access_token)).expect(200);
    expect(again.body.issue[0].diagnostics).toContain('removed 0 resources and 0 versions');
  });

  it('_type removes only the listed types (Provenance only when listed)', async () => {
    const owner = await newOwner();
    const { patient, observations } = await seedRecord(owner);
    const res = await purge(t, '?_type=Observation').set(bearer(owner.user.access_token)).expect(200);
    expect(Object.keys(countsByType(res.body))).toEqual(['Observation']);
    for (const id of observations) expect(await readStatus(t, owner, 'Observation', id)).toBe(404);
    expect(await readStatus(t, owner, 'Patient', patient)).toBe(200);
    const provenance = await t.connection
      .collection('resources')
      .countDocuments({ c: owner.client.client_id, u: owner.user.service_user_id, t: 'Provenance' });
    expect(provenance).toBeGreaterThan(0);

    const both = await purge(t, '?_type=Patient,Provenance').set(bearer(owner.user.access_token)).expect(200);
    expect(Object.keys(countsByType(both.body)).sort()).toEqual(['Patient', 'Provenance']);
    expect(await stored(t, owner)).toEqual({ resources: 0, history: 0 });
    expect(await halfRemoved(t, owner)).toEqual([]);
  });

  it('_before removes resources whose current lastUpdated is strictly earlier', async () => {
    const owner = await newOwner();
    const patient = await create(t, owner, 'Patient', {});
    const old = await create(t, owner, 'Observation', observation(patient));
    const touched = await create(t, owner, 'Observation', observation(patient));
    await new Promise((resolve) => setTimeout(resolve, 20));
    const boundary = new Date().toISOString();
    await new Promise((resolve) => setTimeout(resolve, 20));
    const recent = await create(t, owner, 'Observation', observation(patient));
    await update(t, owner, 'Observation', touched, observation(patient, 'later'));

    // a date in the past matches nothing
    const none = await purge(t, '?_before=2000-01-01').set(bearer(owner.user.access_token)).expect(200);
    expect(none.body.issue).toHaveLength(1);

    const res = await purge(t, `?_before=${encodeURIComponent(boundary)}`)
      .set(bearer(owner.user.access_token))
      .expect(200);
    const counts = countsByType(res.body);
    expect(counts.Patient).toEqual({ resources: 1, versions: 1 });
    expect(counts.Observation).toEqual({ resources: 1, versions: 1 });
    expect(await readStatus(t, owner, 'Observation', old)).toBe(404);
    expect(await readStatus(t, owner, 'Patient', patient)).toBe(404);
    // created before but updated after: its current version is not older, it stays (both versions)
    expect(await readStatus(t, owner, 'Observation', touched)).toBe(200);
    const history = await request(t.server)
      .get(`/r4/Observation/${touched}/_history`)
      .set(bearer(owner.user.access_token))
      .expect(200);
    expect(history.body.total).toBe(2);
    expect(await readStatus(t, owner, 'Observation', recent)).toBe(200);
    expect(await halfRemoved(t, owner)).toEqual([]);
  });

  it('_type and _before combined, and a date-only _before in the future', async () => {
    const owner = await newOwner();
    const { patient, observations } = await seedRecord(owner);
    const res = await purge(t, '?_type=Observation&_before=2999-12-31').set(bearer(owner.user.access_token));
    expect(res.status).toBe(200);
    expect(countsByType(res.body)).toEqual({ Observation: { resources: 2, versions: 3 } });
    for (const id of observations) expect(await readStatus(t, owner, 'Observation', id)).toBe(404);
    expect(await readStatus(t, owner, 'Patient', patient)).toBe(200);

    const nothing = await purge(t, '?_type=Patient&_before=2001-01-01T00:00:00Z').set(
      bearer(owner.user.access_token),
    );
    expect(nothing.status).toBe(200);
    expect(await readStatus(t, owner, 'Patient', patient)).toBe(200);
  });

  it('dry-run counts per type and deletes nothing', async () => {
    const owner = await newOwner();
    const { patient } = await seedRecord(owner);
    const before = await stored(t, owner);
    const res = await purge(t, '?_mode=dry-run&_type=Observation,Patient')
      .set(clientHeaders(owner.client, owner.user.service_user_id))
      .expect(200);
    expect(res.body.issue[0].diagnostics).toMatch(/^dry run: .*would remove 3 resources and 4 versions/);
    expect(countsByType(res.body)).toEqual({
      Observation: { resources: 2, versions: 3 },
      Patient: { resources: 1, versions: 1 },
    });
    expect(await stored(t, owner)).toEqual(before);
    expect(await readStatus(t, owner, 'Patient', patient)).toBe(200);
  });

  it('removes tombstoned (deleted) resources with all their versions: read goes from 410 to 404', async () => {
    const owner = await newOwner();
    const patient = await create(t, owner, 'Patient', {});
    const obs = await create(t, owner, 'Observation', observation(patient));
    const deleted = await request(t.server)
      .delete(`/r4/Observation/${obs}`)
      .set(bearer(owner.user.access_token));
    expect(deleted.status).toBeLessThan(300);
    expect(await readStatus(t, owner, 'Observation', obs)).toBe(410);

    const res = await purge(t, '?_type=Observation')
      .set(clientHeaders(owner.client, owner.user.service_user_id))
      .expect(200);
    expect(countsByType(res.body).Observation).toEqual({ resources: 1, versions: 2 });
    expect(await readStatus(t, owner, 'Observation', obs)).toBe(404);
    const versioned = await request(t.server)
      .get(`/r4/Observation/${obs}/_history/1`)
      .set(bearer(owner.user.access_token));
    expect(versioned.status).toBe(404);
  });

  it('client headers purge the named user; only the client that created the user may', async () => {
    const owner = await newOwner();
    const { patient } = await seedRecord(owner);
    const before = await stored(t, owner);

    // another client naming this user: 404, as if the user did not exist; nothing deleted
    const foreign = await purge(t).set(clientHeaders(clientB, owner.user.service_user_id));
    expect(foreign.status).toBe(404);
    expect(foreign.body.resourceType).toBe('OperationOutcome');
    expect(await stored(t, owner)).toEqual(before);

    // a user token naming another user: two identities at once → 400, nothing of anyone deleted
    const other = await newOwner(clientB);
    await seedRecord(other);
    const otherBefore = await stored(t, other);
    const doubled = await purge(t)
      .set(bearer(other.user.access_token))
      .set('x-service-user-id', String(owner.user.service_user_id));
    expect(doubled.status).toBe(400);
    expect(await stored(t, other)).toEqual(otherBefore);
    expect(await stored(t, owner)).toEqual(before);
    // with its own token alone it touches only its own data
    await purge(t).set(bearer(other.user.access_token)).expect(200);
    expect(await stored(t, other)).toEqual({ resources: 0, history: 0 });
    expect(await stored(t, owner)).toEqual(before);

    await purge(t).set(clientHeaders(owner.client, owner.user.service_user_id)).expect(200);
    expect(await readStatus(t, owner, 'Patient', patient)).toBe(404);
  });

  describe('bad input: a clear 4xx and nothing deleted', () => {
    let owner: Owner;
    let before: { resources: number; history: number };
    beforeAll(async () => {
      owner = await newOwner();
      await seedRecord(owner);
      before = await stored(t, owner);
    });
    afterEach(async () => {
      expect(await stored(t, owner)).toEqual(before);
    });

    it.each([
      ['?_type=Observation,Nope', /Nope/],
      ['?_type=', /_type/],
      ['?_type=MedicationOrder', /MedicationOrder/],
      ['?_before=yesterday', /_before/],
      ['?_before=2024-02-30', /_before/],
      ['?_before=2024-01-01T10:00:00', /_before/],
      ['?_mode=soft', /_mode/],
      ['?_typ=Observation', /_typ/],
      ['?_before=2024-01-01&_before=2025-01-01', /_before/],
    ])('%s → 400 naming the problem', async (query, pattern) => {
      const res = await purge(t, query).set(bearer(owner.user.access_token)).expect(400);
      expect(res.body.resourceType).toBe('OperationOutcome');
      expect(res.body.issue[0].diagnostics).toMatch(pattern);
    });

    it('x-service-user-id: client → 400 (purge is per user)', async () => {
      const res = await purge(t).set(clientHeaders(owner.client, 'client')).expect(400);
      expect(res.body.issue[0].code).toBe('invalid');
    });

    it('an unknown user id, a wrong secret, a bad token → 404 / 401', async () => {
      await purge(t).set(clientHeaders(owner.client, 99999999)).expect(404);
      await purge(t)
        .set({ ...clientHeaders(owner.client, owner.user.service_user_id), client_secret: 'wrong' })
        .expect(401);
      await purge(t).set(bearer('not-a-token')).expect(401);
      await purge(t).expect(401);
    });

    it('an unknown FHIR version → 404', async () => {
      await purge(t, '', 'r5').set(bearer(owner.user.access_token)).expect(404);
    });
  });

  it('removes history rows left without their current document by an interrupted removal', async () => {
    const owner = await newOwner();
    const { patient, observations } = await seedRecord(owner);
    // simulate kill -9 between the two steps of a removal: current document gone, history kept
    const key = `r4|${owner.client.client_id}|Observation|${observations[0]}`;
    await t.connection.collection('resources').deleteOne({ _id: key } as any);
    expect(await halfRemoved(t, owner)).toEqual([`orphan rows ${key}`]);
    expect(await readStatus(t, owner, 'Observation', observations[0])).toBe(404);

    // a purge of other types leaves it (the filter does not match) …
    await purge(t, '?_type=Patient').set(bearer(owner.user.access_token)).expect(200);
    expect(await halfRemoved(t, owner)).toEqual([`orphan rows ${key}`]);
    // … one that matches removes the leftover rows with the rest
    const res = await purge(t, '?_type=Observation').set(bearer(owner.user.access_token)).expect(200);
    expect(countsByType(res.body).Observation).toEqual({ resources: 1, versions: 3 });
    expect(await halfRemoved(t, owner)).toEqual([]);
    expect(await readStatus(t, owner, 'Patient', patient)).toBe(404);
  });

  it('with _before, the sweep removes a leftover whose versions are all older, and keeps one with a newer version', async () => {
    const owner = await newOwner();
    const patient = await create(t, owner, 'Patient', {});
    const oldGone = await create(t, owner, 'Observation', observation(patient));
    const touchedGone = await create(t, owner, 'Observation', observation(patient));
    await new Promise((resolve) => setTimeout(resolve, 20));
    const boundary = new Date().toISOString();
    await new Promise((resolve) => setTimeout(resolve, 20));
    await update(t, owner, 'Observation', touchedGone, observation(patient, 'later'));
    // both interrupted between the two steps of a removal: current document gone, history kept
    const keyOf = (id: string) => `r4|${owner.client.client_id}|Observation|${id}`;
    await t.connection
      .collection('resources')
      .deleteMany({ _id: { $in: [keyOf(oldGone), keyOf(touchedGone)] } } as any);

    const res = await purge(t, `?_before=${encodeURIComponent(boundary)}`)
      .set(bearer(owner.user.access_token))
      .expect(200);
    // the leftover's one version is counted, without a resource; the Patient goes as usual
    const counts = countsByType(res.body);
    expect(counts.Patient).toEqual({ resources: 1, versions: 1 });
    expect(counts.Observation).toEqual({ resources: 0, versions: 1 });
    // its newest version is not older than _before: its rows stay, as its current document would have
    expect(await halfRemoved(t, owner)).toEqual([`orphan rows ${keyOf(touchedGone)}`]);
    const rows = await t.connection.collection('resource_history').countDocuments({ rk: keyOf(touchedGone) });
    expect(rows).toBe(2);
    // a purge without _before takes them
    await purge(t).set(bearer(owner.user.access_token)).expect(200);
    expect(await halfRemoved(t, owner)).toEqual([]);
  });

  it('a client that goes away leaves nothing half removed, and a repeat finishes the rest', async () => {
    const owner = await newOwner();
    await load(t, owner, 10);
    const initial = await stored(t, owner);
    await purge(t)
      .set(bearer(owner.user.access_token))
      .timeout(5)
      .catch(() => undefined);
    // the purge may go on until its current batch ends (see purge.service.spec.ts for the stop)
    const after = await settled(t, owner);
    expect(after.resources).toBeLessThanOrEqual(initial.resources);
    expect(await halfRemoved(t, owner)).toEqual([]);
    const rest = await purge(t).set(bearer(owner.user.access_token)).expect(200);
    const counted = Object.values(countsByType(rest.body)).reduce((sum, c) => sum + c.resources, 0);
    expect(counted).toBe(after.resources);
    expect(await stored(t, owner)).toEqual({ resources: 0, history: 0 });
  });

  it('documents the parameters, _mode values and the timeout in Swagger', async () => {
    const res = await request(t.server).get('/docs-json').expect(200);
    const operation = res.body.paths['/{version}/purge']?.delete;
    expect(operation).toBeDefined();
    const names = operation.parameters.map((p: any) => p.name);
    expect(names).toEqual(expect.arrayContaining(['version', '_type', '_before', '_mode']));
    const mode = operation.parameters.find((p: any) => p.name === '_mode');
    expect(mode.schema.enum).toEqual(['delete', 'dry-run']);
    expect(operation.responses['504'].description).toMatch(/repeat/);
    expect(operation.security).toEqual(expect.arrayContaining([{ bearer: [] }]));
  });
});

describe('purge budget (e2e, PURGE_BUDGET_MS=100)', () => {
  // loading a few hundred resources through bundles takes a while on a busy machine
  jest.setTimeout(300_000);
  let t: TestApp;
  let owner: Owner;
  let neighbour: Owner;

  beforeAll(async () => {
    t = await createTestApp({ ...IDENTITY_TEST_ENV, PURGE_BUDGET_MS: '100' });
    const client = await createClient(t);
    owner = { client, user: await createUser(t, client) };
    neighbour = { client, user: await createUser(t, client) };
  });
  afterAll(async () => t?.close());

  it('a small purge under a tight budget answers 200 with its counts, never "504 … 0 remain"', async () => {
    for (let i = 0; i < 5; i++) {
      const who = { client: owner.client, user: await createUser(t, owner.client) };
      for (let k = 0; k < 3; k++) {
        await request(t.server)
          .post('/r4/Patient')
          .set(bearer(who.user.access_token))
          .set('Content-Type', FHIR_JSON)
          .send(JSON.stringify({ resourceType: 'Patient', gender: 'other' }))
          .expect(201);
      }
      const res = await purge(t).set(bearer(who.user.access_token));
      expect({ status: res.status, text: res.status === 200 ? '' : res.text }).toEqual({
        status: 200,
        text: '',
      });
      expect(countsByType(res.body).Patient?.resources).toBe(3);
      expect(await stored(t, who)).toEqual({ resources: 0, history: 0 });
    }
  });

  it('answers 504 timeout when the budget runs out, keeps what it removed, and converges', async () => {
    // 100 bundles: 2,000 Observations and one Provenance each, enough to outlast the budget: while
    // the engine is quick the batches double up to range deletes of many slices, and 580 went in
    // one request's 90 ms, 1,200 in two
    await load(t, owner, 100);
    await load(t, neighbour, 1);
    const initial = await stored(t, owner);
    const neighbourBefore = await stored(t, neighbour);
    expect(initial.resources).toBeGreaterThanOrEqual(2_000);

    let removed = 0;
    let versions = 0;
    let rounds = 0;
    let lastRemaining = Number.POSITIVE_INFINITY;
    for (;;) {
      rounds++;
      const res = await purge(t).set(bearer(owner.user.access_token));
      const counts = Object.values(countsByType(res.body));
      removed += counts.reduce((sum, c) => sum + c.resources, 0);
      versions += counts.reduce((sum, c) => sum + c.versions, 0);
      expect(await halfRemoved(t, owner)).toEqual([]);
      if (res.status === 200) break;
      expect(res.status).toBe(504);
      expect(res.body.issue[0]).toMatchObject({ severity: 'error', code: 'timeout' });
      const remaining = Number(
        /about (\d+) matching resources remain/.exec(res.body.issue[0].diagnostics)![1],
      );
      expect(remaining).toBe((await stored(t, owner)).resources);
      expect(remaining).toBeLessThan(lastRemaining);
      lastRemaining = remaining;
      expect(rounds).toBeLessThan(200);
    }
    expect(rounds).toBeGreaterThan(1);
    expect(removed).toBe(initial.resources);
    expect(versions).toBe(initial.history);
    expect(await stored(t, owner)).toEqual({ resources: 0, history: 0 });
    expect(await stored(t, neighbour)).toEqual(neighbourBefore);
  });
});
