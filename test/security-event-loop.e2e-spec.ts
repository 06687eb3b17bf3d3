import request from 'supertest';
import {
  bearer,
  createClient,
  createFemalePatient,
  createTestApp,
  createUser,
  IDENTITY_TEST_ENV,
  longestLoopBlockMs,
  TestApp,
  TestUser,
} from '@app/testing';

const XHTML = 'http://www.w3.org/1999/xhtml';
const NESTING = 32_000;
/** The probe's narrative: 32,000 nested `<b>` (224 KB), once n² in the nesting depth. */
const nested = `<div xmlns="${XHTML}">${'<b>'.repeat(NESTING)}x${'</b>'.repeat(NESTING)}</div>`;
/** A legal narrative of the same length: the cost a linear check may take. */
const flat = `<div xmlns="${XHTML}">${'<p>x</p>'.repeat((nested.length - 50) / 8)}</div>`;

/**
 * Caller-supplied structure walked on the event loop (the narrative's XHTML) costs time linear in
 * its size, and a document nested deeper than the limit is refused at the limit (docs/security.md):
 * whatever route validates it, in every FHIR version, the app's event loop is never held longer
 * than a legal document of the same size holds it, and another tenant's reads go on meanwhile.
 */
describe('security: the event loop is not held by deep narratives (e2e)', () => {
  let t: TestApp;
  let attacker: TestUser;
  let victim: TestUser;
  let attackerPatient: string;
  let victimPatient: string;
  const json = 'application/fhir+json';
  const patient = (div: string, id?: string) =>
    JSON.stringify({ resourceType: 'Patient', ...(id ? { id } : {}), text: { status: 'generated', div } });
  const send = (method: 'post' | 'put' | 'patch', path: string, body: string, type = json) =>
    request(t.server)[method](path).set(bearer(attacker.access_token)).set('Content-Type', type).send(body);

  /** Every route that validates a narrative, in each FHIR version, with the div given. */
  const everyRoute = (div: string) => [
    () => send('post', '/r4/Patient/$validate', patient(div)),
    () => send('post', '/r4/Patient', patient(div)),
    () => send('put', `/r4/Patient/${attackerPatient}`, patient(div, attackerPatient)),
    () =>
      send(
        'patch',
        `/r4/Patient/${attackerPatient}`,
        JSON.stringify([{ op: 'add', path: '/text', value: { status: 'generated', div } }]),
        'application/json-patch+json',
      ),
    () =>
      send(
        'post',
        '/r4',
        JSON.stringify({
          resourceType: 'Bundle',
          type: 'transaction',
          entry: [{ resource: JSON.parse(patient(div)), request: { method: 'POST', url: 'Patient' } }],
        }),
      ),
    () => send('post', '/stu3/Patient', patient(div)),
    () => send('post', '/dstu2/Patient', patient(div)),
  ];

  /** Runs the routes one after another while the victim reads; the loop's worst hold and the victim's slowest read. */
  const measure = async (calls: Array<() => request.Test>) => {
    const answers: request.Response[] = [];
    let done = false;
    let slowestRead = 0;
    const victimReads = (async () => {
      while (!done) {
        const started = performance.now();
        const res = await request(t.server)
          .get(`/r4/Patient/${victimPatient}`)
          .set(bearer(victim.access_token));
        expect(res.status).toBe(200);
        slowestRead = Math.max(slowestRead, performance.now() - started);
      }
    })();
    const held = await longestLoopBlockMs(async () => {
      for (const call of calls) answers.push(await call());
      done = true;
      await victimReads;
    });
    return { held, slowestRead, answers };
  };

  beforeAll(async () => {
    t = await createTestApp(IDENTITY_TEST_ENV);
    attacker = await createUser(t, await createClient(t));
    victim = await createUser(t, await createClient(t));
    const created = (user: TestUser) => createFemalePatient(t, user);
    attackerPatient = await created(attacker);
    victimPatient = await created(victim);
  });
  afterAll(async () => t?.close());

  it('32,000 nested elements are refused at the depth limit on every route; the loop is held no longer than by a legal div', async () => {
    // first use of a version loads its definitions: not what is measured here
    for (const call of everyRoute(`<div xmlns="${XHTML}">warm</div>`))
      expect((await call()).status).toBeLessThan(300);
    const legal = await measure(everyRoute(flat));
    for (const res of legal.answers) expect(res.status).toBeLessThan(300);
    const attack = await measure(everyRoute(nested));

    const [validate, ...writes] = attack.answers;
    expect(validate.status).toBe(200);
    expect(validate.body.issue).toEqual(
      expect.arrayContaining([
        expect.objectContaining({
          severity: 'error',
          diagnostics: expect.stringContaining('200 levels deep'),
        }),
      ]),
    );
    for (const res of writes) {
      // a transaction answers its refused entry inside the transaction-response
      const outcome = res.body.resourceType === 'Bundle' ? res.body.entry[0].response.outcome : res.body;
      if (res.body.resourceType === 'Bundle') expect(res.body.entry[0].response.status).toMatch(/^400/);
      else expect([400, 422]).toContain(res.status);
      expect(outcome.resourceType).toBe('OperationOutcome');
      expect(outcome.issue[0].diagnostics).toContain('200 levels deep');
    }
    // Generous against a loaded machine; the quadratic check held the loop for tens of seconds.
    expect(attack.held).toBeLessThan(3 * legal.held + 500);
    expect(attack.slowestRead).toBeLessThan(3 * legal.slowestRead + 500);
    const stored = await request(t.server)
      .get(`/r4/Patient/${attackerPatient}`)
      .set(bearer(attacker.access_token))
      .expect(200);
    expect(stored.body.text?.div).not.toBe(nested);
  });
});
