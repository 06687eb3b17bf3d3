import { performance } from 'node:perf_hooks';
import request from 'supertest';
import {
  bearer,
  createAppWithUsers,
  IDENTITY_TEST_ENV,
  TestApp,
  TestUser,
  untilAdmitted,
} from '@app/testing';

const json = 'application/fhir+json';
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A legal Patient of many elements (1000 of each repeating one): its validation walks all of them. */
const manyElements = (id: string) => ({
  resourceType: 'Patient',
  id,
  gender: 'female',
  name: Array.from({ length: 1000 }, (_, i) => ({ family: `Family${i}`, given: ['A', 'B'] })),
  identifier: Array.from({ length: 1000 }, (_, i) => ({ system: 'urn:example', value: `v${i}` })),
  telecom: Array.from({ length: 1000 }, (_, i) => ({ system: 'phone', value: `+1555${i}` })),
  address: Array.from({ length: 1000 }, (_, i) => ({ line: [`${i} Main St`], city: 'Town' })),
});

/**
 * The validation of a request's resources after admission is event-loop time charged to the caller
 * (CLIENT_LOOP_MS_PER_SECOND, admission's timedOnLoop), as its body's parse is before admission. A
 * JSON Patch's body is a few bytes, but the patched resource is validated whole: a client looping
 * small patches of a resource of many elements walks it each time. Before, only the tiny body's
 * parse was charged, so the loop was never refused; now it is, while another client is reading,
 * and the reader never is.
 */
describe('security: validation after admission charged as event-loop time (e2e)', () => {
  let t: TestApp;
  let attacker: TestUser;
  let victim: TestUser;
  beforeAll(async () => {
    // only the event-loop share refuses here
    ({
      t,
      users: [attacker],
      strangers: [victim],
    } = await createAppWithUsers(
      { users: 1, strangers: 1 },
      {
        ...IDENTITY_TEST_ENV,
        CLIENT_LOOP_MS_PER_SECOND: '10',
        CLIENT_DATABASE_MS_PER_SECOND: '0',
        CLIENT_RESPONSE_BYTES_PER_SECOND: '0',
      },
    ));
    for (const [user, resource] of [
      [attacker, manyElements('wide')],
      [victim, { resourceType: 'Patient', id: 'victim' }],
    ] as const) {
      const res = await untilAdmitted(() =>
        request(t.server)
          .put(`/r4/Patient/${resource.id}`)
          .set(bearer(user.access_token))
          .set('Content-Type', json)
          .send(JSON.stringify(resource)),
      );
      expect(res.status).toBe(201);
    }
  });
  afterAll(async () => t?.close());

  it('a client looping small JSON Patches of a resource of many elements is refused 429 naming CLIENT_LOOP_MS_PER_SECOND while another reads', async () => {
    let gender = 0;
    const until = performance.now() + 4_000;
    const patches: request.Response[] = [];
    const patcher = async () => {
      while (performance.now() < until) {
        const res = await request(t.server)
          .patch('/r4/Patient/wide')
          .set(bearer(attacker.access_token))
          .set('Content-Type', 'application/json-patch+json')
          .set('Prefer', 'return=minimal')
          .send(
            JSON.stringify([{ op: 'replace', path: '/gender', value: gender++ % 2 ? 'male' : 'female' }]),
          );
        patches.push(res);
        if (res.status === 429) await sleep(100);
      }
    };
    const reads: request.Response[] = [];
    const reader = async () => {
      while (performance.now() < until)
        reads.push(await request(t.server).get('/r4/Patient/victim').set(bearer(victim.access_token)));
    };
    await Promise.all([reader(), patcher(), patcher()]);
    expect(
      patches.filter((res) => res.status !== 200 && res.status !== 429).map((res) => [res.status, res.text]),
    ).toStrictEqual([]);
    const refused = patches.filter((res) => res.status === 429);
    expect(refused.length).toBeGreaterThan(0);
    expect(refused[0].body.issue[0].diagnostics).toMatch(/event-loop time .*CLIENT_LOOP_MS_PER_SECOND/);
    expect(reads.length).toBeGreaterThan(0);
    expect(reads.filter((res) => res.status !== 200).map((res) => [res.status, res.text])).toStrictEqual([]);
  });
});
