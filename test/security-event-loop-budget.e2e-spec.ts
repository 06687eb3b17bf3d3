import { performance } from 'node:perf_hooks';
import request from 'supertest';
import { bearer, createAppWithUsers, IDENTITY_TEST_ENV, TestApp, TestUser } from '@app/testing';

const XHTML = 'http://www.w3.org/1999/xhtml';
const json = 'application/fhir+json';
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
/** Past this a client is no longer active for the others (ClientConcurrency's ACTIVE_MS + margin). */
const QUIET_MS = 1_200;

let made = 0;
/** A legal Patient with a ~400 KB narrative, each different (sliced results are kept per text). */
const largeNarrative = () =>
  JSON.stringify({
    resourceType: 'Patient',
    text: {
      status: 'generated',
      div: `<div xmlns="${XHTML}"><p>${made++}</p>${'<p>x</p>'.repeat(50_000)}</div>`,
    },
  });
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];

/**
 * Event-loop time is a unit of the cost budget (docs/security.md "The cost budget",
 * CLIENT_LOOP_MS_PER_SECOND): every request of the flood below is within the caps (a legal
 * narrative, parsed in slices), but their volume held the one event loop every tenant shares.
 * The time its body parse and narrative slices take on the loop is charged to the client, so while
 * another client is active it is refused 429 naming the setting, and the other client's reads go
 * on; alone on the server it is never refused (work-conserving). Before, nothing counted loop time:
 * the flood was never refused.
 */
describe('security: event-loop time charged to the caller (e2e)', () => {
  let t: TestApp;
  let attacker: TestUser;
  let victim: TestUser;
  beforeAll(async () => {
    // two clients of one user each: the attacker's and the victim's
    ({
      t,
      users: [attacker],
      strangers: [victim],
    } = await createAppWithUsers(
      { users: 1, strangers: 1 },
      {
        ...IDENTITY_TEST_ENV,
        CLIENT_LOOP_MS_PER_SECOND: '100',
        // the loop unit alone: the 1 MB bodies' bytes would otherwise spend the byte share first
        CLIENT_RESPONSE_BYTES_PER_SECOND: '0',
      },
    ));
    await request(t.server)
      .put('/r4/Patient/victim')
      .set(bearer(victim.access_token))
      .set('Content-Type', json)
      .send(JSON.stringify({ resourceType: 'Patient', id: 'victim' }))
      .expect(201);
  });
  afterAll(async () => t?.close());

  const validate = () =>
    request(t.server)
      .post('/r4/Patient/$validate')
      .set(bearer(attacker.access_token))
      .set('Content-Type', json)
      .send(largeNarrative());

  /** Four connections of `$validate` of large narratives until `until`, back 50 ms after a 429 (Retry-After ignored). */
  const flood = async (until: number) => {
    const answers: request.Response[] = [];
    const connection = async () => {
      while (performance.now() < until) {
        const res = await validate();
        answers.push(res);
        if (res.status === 429) await sleep(50);
      }
    };
    await Promise.all(Array.from({ length: 4 }, connection));
    return answers;
  };

  /** The victim's reads, one every 50 ms, until `until`: their times (all must be 200). */
  const reads = async (until: number) => {
    const times: number[] = [];
    const answers: request.Response[] = [];
    while (performance.now() < until) {
      const started = performance.now();
      answers.push(await request(t.server).get('/r4/Patient/victim').set(bearer(victim.access_token)));
      times.push(performance.now() - started);
      await sleep(50);
    }
    return { times, answers };
  };

  it('a client flooding large legal narratives is refused 429 naming CLIENT_LOOP_MS_PER_SECOND while another reads; alone it is never refused', async () => {
    // alone on the server: nobody waits for the loop, nothing is refused
    await sleep(QUIET_MS);
    const alone = await flood(performance.now() + 2_000);
    expect(alone.length).toBeGreaterThan(0);
    expect(alone.filter((res) => res.status !== 200).map((res) => [res.status, res.text])).toStrictEqual([]);

    // the victim alone, then the same flood while the victim reads
    await sleep(QUIET_MS);
    const baseline = await reads(performance.now() + 1_500);
    const until = performance.now() + 4_000;
    const [attack, during] = await Promise.all([flood(until), reads(until)]);

    const refused = attack.filter((res) => res.status === 429);
    expect(
      attack.filter((res) => res.status !== 200 && res.status !== 429).map((res) => res.text),
    ).toStrictEqual([]);
    expect(refused.length).toBeGreaterThan(0);
    expect(refused[0].body.resourceType).toBe('OperationOutcome');
    expect(refused[0].body.issue[0].diagnostics).toMatch(/event-loop time .*CLIENT_LOOP_MS_PER_SECOND/);
    expect(Number(refused[0].headers['retry-after'])).toBeGreaterThanOrEqual(1);
    for (const { answers } of [baseline, during])
      expect(answers.filter((res) => res.status !== 200).map((res) => [res.status, res.text])).toStrictEqual(
        [],
      );
    // generous against a loaded machine: the reads' median moves little, the flood's slices run one per turn
    expect(median(during.times)).toBeLessThan(3 * median(baseline.times) + 50);
  });
  it('a refused upload is answered after a second with its body unread, so ignoring Retry-After cannot turn refusals into a flood of bodies read', async () => {
    // the victim active, the attacker driven past its share
    const victimActive = setInterval(() => {
      void request(t.server)
        .get('/r4/Patient/victim')
        .set(bearer(victim.access_token))
        .then(() => undefined);
    }, 100);
    try {
      let waited = 0;
      for (let tries = 0; tries < 15 && waited < 950; tries++) {
        const started = performance.now();
        const res = await validate();
        if (res.status === 429) waited = Math.max(waited, performance.now() - started);
        else expect(res.status).toBe(200);
      }
      expect(waited).toBeGreaterThanOrEqual(950);
    } finally {
      clearInterval(victimActive);
    }
  });
});
