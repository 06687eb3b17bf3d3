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
import { ResourceRepository } from '../src/storage/resource.repository';

/** Writes `entry` in batches of 20 (a posted Bundle's limit); every entry must succeed. */
async function postInBatches(t: TestApp, user: TestUser, entry: readonly object[]): Promise<void> {
  for (let from = 0; from < entry.length; from += 20) {
    const res = await request(t.server)
      .post('/r4')
      .set(bearer(user.access_token))
      .set('Content-Type', 'application/fhir+json')
      .send(JSON.stringify({ resourceType: 'Bundle', type: 'batch', entry: entry.slice(from, from + 20) }))
      .expect(200);
    for (const answer of res.body.entry) expect(answer.response.status).toMatch(/^20[01]/);
  }
}

/**
 * Database work a caller causes is bounded and charged to it (docs/security.md "Database work"):
 * repeated `_include`/`_revinclude` directives collapse, distinct ones are capped, a search lists
 * a bounded number of values, and the database time of a client's reads is charged to its share,
 * so a client whose queries are slow but answer little is refused (429) while others are served.
 */
describe('security: database work of includes and search values (e2e)', () => {
  let t: TestApp;
  let alice: TestUser;
  const RING = 30;
  beforeAll(async () => {
    t = await createTestApp({ ...IDENTITY_TEST_ENV });
    alice = await createUser(t, await createClient(t));
    // Patients in a `link` ring: each one's revinclude is the next one
    const entry = Array.from({ length: RING }, (_, i) => ({
      resource: {
        resourceType: 'Patient',
        id: `ring-${i}`,
        name: [{ family: 'Ring' }],
        link: [{ other: { reference: `Patient/ring-${(i + 1) % RING}` }, type: 'seealso' }],
      },
      request: { method: 'PUT', url: `Patient/ring-${i}` },
    }));
    await postInBatches(t, alice, entry);
  });
  afterAll(async () => t?.close());

  const search = (query: string) =>
    request(t.server).get(`/r4/Patient?${query}`).set(bearer(alice.access_token));

  /** Calls of `sizesOf` (one query of the reference index each) while `action` runs. */
  async function includeQueriesDuring<T>(action: () => Promise<T>): Promise<{ result: T; queries: number }> {
    const repository = t.app.get(ResourceRepository);
    const spy = jest.spyOn(repository, 'sizesOf');
    try {
      const result = await action();
      return { result, queries: spy.mock.calls.length };
    } finally {
      spy.mockRestore();
    }
  }

  it('60 × the same _revinclude:iterate=* is one directive: the same answer and the same queries as one', async () => {
    const once = await includeQueriesDuring(() =>
      search('family=Ring&_count=5&_revinclude:iterate=*').expect(200),
    );
    const repeated = await includeQueriesDuring(() =>
      search(`family=Ring&_count=5&${Array(60).fill('_revinclude:iterate=*').join('&')}`).expect(200),
    );
    const ids = (res: request.Response) =>
      res.body.entry.map((e: any) => `${e.search.mode} ${e.resource.id}`).sort();
    expect(ids(repeated.result)).toEqual(ids(once.result));
    expect(ids(once.result).filter((id: string) => id.startsWith('include'))).not.toHaveLength(0);
    // before: 60 regex scans of the reference index per level, 120 in all
    expect(repeated.queries).toBe(once.queries);
    expect(once.queries).toBeLessThanOrEqual(4);
  });

  it('more than 20 distinct _include/_revinclude directives → 400 too-costly naming the limit; 20 are served', async () => {
    const distinct = REVINCLUDES.map((directive) => `_revinclude=${directive}`);
    expect(distinct.length).toBeGreaterThan(20);
    const over = await search(`family=Ring&${distinct.join('&')}`).expect(400);
    expect(over.body.issue[0]).toMatchObject({
      code: 'too-costly',
      diagnostics: `the search has ${distinct.length} distinct _include/_revinclude directives; at most 20`,
    });
    await search(`family=Ring&${distinct.slice(0, 20).join('&')}`).expect(200);
  });

  it('a wildcard _revinclude:iterate over a whole page of sources stays one bounded query per 100 sources (no over-long pattern, no 500)', async () => {
    const page = await includeQueriesDuring(() =>
      search('family=Ring&_count=100&_revinclude:iterate=*&_revinclude:iterate=*').expect(200),
    );
    const modes = page.result.body.entry.map((e: any) => e.search.mode);
    expect(modes.filter((m: string) => m === 'match')).toHaveLength(RING);
    expect(page.queries).toBeLessThanOrEqual(2);
  });

  it(':iterate follows the ring level after level up to the depth cap, and the page warns that it stopped', async () => {
    const res = await search('family=Ring&_count=1&_revinclude:iterate=Patient:link').expect(200);
    const modes = res.body.entry.map((e: any) => e.search.mode);
    expect(modes.filter((m: string) => m === 'match')).toHaveLength(1);
    // the first level and two iterations (one iteration was the cap before): 3 patients
    expect(modes.filter((m: string) => m === 'include')).toHaveLength(3);
    const outcomes = res.body.entry.filter((e: any) => e.search.mode === 'outcome');
    expect(outcomes).toHaveLength(1);
    expect(outcomes[0].resource.issue[0]).toMatchObject({
      severity: 'warning',
      code: 'too-costly',
      diagnostics: expect.stringContaining('followed 3 levels deep'),
    });
    // every patient a match: nothing new to include, no level is capped
    const whole = await search(`family=Ring&_count=${RING}&_revinclude:iterate=Patient:link`).expect(200);
    expect(whole.body.entry.every((e: any) => e.search.mode === 'match')).toBe(true);
  });

  it('a search parameter listing more than 100 values → 400 too-costly naming the limit (the database never sees it)', async () => {
    const values = Array.from({ length: 101 }, (_, i) => `zq${i}`).join(',');
    const res = await request(t.server)
      .get(`/r4/Observation?_content=${values}`)
      .set(bearer(alice.access_token))
      .expect(400);
    expect(res.body.issue[0]).toMatchObject({
      code: 'too-costly',
      diagnostics: "'_content' lists 101 values; at most 100 per parameter",
    });
  });
});

/** Revinclude directives of distinct source types and parameters, all naming Patient. */
const REVINCLUDES = [
  'Observation:subject',
  'Observation:patient',
  'Observation:performer',
  'Condition:subject',
  'Condition:patient',
  'Encounter:subject',
  'Encounter:patient',
  'Procedure:subject',
  'Procedure:patient',
  'MedicationRequest:subject',
  'MedicationRequest:patient',
  'Immunization:patient',
  'AllergyIntolerance:patient',
  'DiagnosticReport:subject',
  'DiagnosticReport:patient',
  'CarePlan:subject',
  'CarePlan:patient',
  'Claim:patient',
  'Coverage:beneficiary',
  'DocumentReference:subject',
  'DocumentReference:patient',
  'Goal:subject',
];

describe('security: database time of reads charged to the client (e2e)', () => {
  let t: TestApp;
  let attacker: TestUser;
  let victim: TestUser;
  beforeAll(async () => {
    t = await createTestApp({ ...IDENTITY_TEST_ENV, CLIENT_DATABASE_MS_PER_SECOND: '200' });
    attacker = await createUser(t, await createClient(t));
    victim = await createUser(t, await createClient(t));
    const words = ['alpha', 'bravo', 'charlie', 'delta', 'echo', 'foxtrot', 'golf', 'hotel'];
    const entry = Array.from({ length: 300 }, (_, i) => ({
      resource: {
        resourceType: 'Observation',
        status: 'final',
        code: { text: `${words[i % 8]} ${words[(i * 3) % 8]} measurement ${i}` },
        note: [{ text: words.map((w, j) => `${w}${(i + j) % 50}`).join(' ') }],
      },
      request: { method: 'POST', url: 'Observation' },
    }));
    await postInBatches(t, attacker, entry);
    await request(t.server)
      .put('/r4/Patient/victim')
      .set(bearer(victim.access_token))
      .set('Content-Type', 'application/fhir+json')
      .send(JSON.stringify({ resourceType: 'Patient', id: 'victim', name: [{ family: 'Victim' }] }))
      .expect(201);
  });
  afterAll(async () => t?.close());

  const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
  const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];

  /** The victim's reads of its own small Patient, one every 300 ms while `running()`: status and ms each. */
  async function victimReads(running: () => boolean): Promise<Array<{ status: number; ms: number }>> {
    const answers: Array<{ status: number; ms: number }> = [];
    while (running()) {
      const start = performance.now();
      const res = await request(t.server).get('/r4/Patient/victim').set(bearer(victim.access_token));
      answers.push({ status: res.status, ms: performance.now() - start });
      await sleep(300);
    }
    return answers;
  }

  it('a client looping slow searches that answer almost nothing gets 429 naming CLIENT_DATABASE_MS_PER_SECOND; the other client is served throughout', async () => {
    // prefixes that match nothing: every one is a scan of the full-text index, the answer is empty
    const slow = `/r4/Observation?_content=${Array.from({ length: 100 }, (_, i) => `zz${i}`).join(',')}`;
    let until = performance.now() + 2_000;
    const alone = await victimReads(() => performance.now() < until);
    until = performance.now() + 5_000;
    const attack: request.Response[] = [];
    const loop = async () => {
      while (performance.now() < until) {
        const res = await request(t.server).get(slow).set(bearer(attacker.access_token));
        attack.push(res);
        if (res.status === 429) await sleep(100);
      }
    };
    const [underAttack] = await Promise.all([
      victimReads(() => performance.now() < until),
      ...Array.from({ length: 4 }, loop),
    ]);
    const statuses = attack.map((res) => res.status);
    const refused = attack.filter((res) => res.status === 429);
    // small answers: the byte share alone never refused them
    expect(attack.filter((res) => res.status === 200).every((res) => res.text.length < 4096)).toBe(true);
    expect(new Set(statuses)).toEqual(new Set([200, 429]));
    expect(refused[0].body.issue[0].diagnostics).toMatch(/CLIENT_DATABASE_MS_PER_SECOND/);
    expect(Number(refused[0].headers['retry-after'])).toBeGreaterThanOrEqual(1);
    expect(underAttack.every((answer) => answer.status === 200)).toBe(true);
    expect(alone.every((answer) => answer.status === 200)).toBe(true);
    console.log(
      `victim median read alone ${median(alone.map((a) => a.ms)).toFixed(1)} ms, under attack ${median(underAttack.map((a) => a.ms)).toFixed(1)} ms; attacker ${attack.length} requests, ${refused.length} refused`,
    );
  });
});
