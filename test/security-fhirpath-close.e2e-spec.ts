import type { Response } from 'supertest';
import {
  catastrophicFhirPath,
  createClient,
  createFemalePatient,
  createTestApp,
  createUser,
  IDENTITY_TEST_ENV,
  patchGender,
  TestApp,
  TestUser,
} from '@app/testing';
import { FhirPathTurns } from '../src/admission/fhirpath-turns';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * A FHIRPath Patch whose evaluation is still running in the worker pool when the app closes (a
 * deploy, a restart): its workers are terminated under it. The client gets a 503 OperationOutcome
 * it may retry, or its connection ends; never a 500, which says the server failed at the request.
 */
describe('security: a costly FHIRPath patch in flight when the app closes (e2e)', () => {
  let t: TestApp | undefined;
  let user: TestUser;
  let id: string;

  beforeAll(async () => {
    t = await createTestApp({ ...IDENTITY_TEST_ENV, FHIRPATH_TIMEOUT_MS: '10000' });
    user = await createUser(t, await createClient(t));
    id = await createFemalePatient(t, user);
  });
  afterAll(async () => t?.close());

  it('answers 503 with an OperationOutcome, or ends the connection, never 500', async () => {
    const app = t!;
    const turns = app.app.get(FhirPathTurns);
    const answered = patchGender(app, user, id, catastrophicFhirPath(31)).then(
      (res: Response) => res,
      (error: Error) => error,
    );
    for (let waited = 0; turns.load.running === 0; waited += 10) {
      if (waited > 20_000) throw new Error('the costly patch never reached the worker pool');
      await sleep(10);
    }
    t = undefined;
    await app.close();
    const outcome = await answered;
    if (outcome instanceof Error) return; // the connection ended: the client retries
    expect([outcome.status, outcome.body?.resourceType]).toStrictEqual([503, 'OperationOutcome']);
    expect(outcome.headers['retry-after']).toBeDefined();
  });
});
