import request from 'supertest';
import { bearer, type TestUser } from './factories';
import type { TestApp } from './test-app';

const json = 'application/fhir+json';

/** A FHIRPath Patch (https://hl7.org/fhir/R4/fhirpatch.html) replacing what `path` selects with gender `male`. */
export function replaceGenderPatch(path: string) {
  return {
    resourceType: 'Parameters',
    parameter: [
      {
        name: 'operation',
        part: [
          { name: 'type', valueCode: 'replace' },
          { name: 'path', valueString: path },
          { name: 'value', valueCode: 'male' },
        ],
      },
    ],
  };
}

/**
 * The probe's expression: each extra `a` doubles the backtracking of `^(a+)+$` on JavaScript's
 * regex engine (29 runs far past FHIRPATH_TIMEOUT_MS).
 */
export const catastrophicFhirPath = (as: number) =>
  `Patient.where('${'a'.repeat(as)}!'.matches('^(a+)+$')).gender`;

/** Creates a female Patient for `user` (201 expected) and answers its id: the FHIRPath patch tests' target. */
export async function createFemalePatient(t: TestApp, user: TestUser): Promise<string> {
  const res = await request(t.server)
    .post('/r4/Patient')
    .set(bearer(user.access_token))
    .set('Content-Type', json)
    .send(JSON.stringify({ resourceType: 'Patient', gender: 'female' }))
    .expect(201);
  return res.body.id as string;
}

/** Sends `user`'s FHIRPath Patch replacing what `path` selects on Patient `id` (replaceGenderPatch). */
export function patchGender(t: TestApp, user: TestUser, id: string, path: string): request.Test {
  return request(t.server)
    .patch(`/r4/Patient/${id}`)
    .set(bearer(user.access_token))
    .set('Content-Type', json)
    .send(JSON.stringify(replaceGenderPatch(path)));
}
