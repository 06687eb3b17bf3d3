import request from 'supertest';
import type { TestApp } from './test-app';

/**
 * 300 Observations of words (code text and a note of eight words each), posted by the caller in
 * batches of 20: what slow full-text searches (`_content` of many absent prefixes) scan in the
 * admission tests.
 */
export async function seedWordObservations(t: TestApp, accessToken: string): Promise<void> {
  const words = ['alpha', 'bravo', 'charlie', 'delta', 'echo', 'foxtrot', 'golf', 'hotel'];
  for (let from = 0; from < 300; from += 20) {
    const entry = Array.from({ length: 20 }, (_, k) => ({
      resource: {
        resourceType: 'Observation',
        status: 'final',
        code: { text: `${words[(from + k) % 8]} measurement ${from + k}` },
        note: [{ text: words.map((w, j) => `${w}${(from + k + j) % 50}`).join(' ') }],
      },
      request: { method: 'POST', url: 'Observation' },
    }));
    await request(t.server)
      .post('/r4')
      .set('Authorization', `Bearer ${accessToken}`)
      .set('Content-Type', 'application/fhir+json')
      .send(JSON.stringify({ resourceType: 'Bundle', type: 'batch', entry }))
      .expect(200);
  }
}
