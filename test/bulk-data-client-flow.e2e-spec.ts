import { generateKeyPairSync, randomUUID } from 'crypto';
import { sign } from 'jsonwebtoken';
import request from 'supertest';
import { validateResource } from '@app/fhir';
import { BackendServicesService } from '../src/modules/auth/backend-services/backend-services.service';
import {
  bearer,
  createClient,
  createTestApp,
  createUser,
  IDENTITY_TEST_ENV,
  TestApp,
  TestClient,
  TestUser,
} from '@app/testing';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * The Bulk Data IG flow as the SMART bulk-data-client performs it
 * (https://hl7.org/fhir/uv/bulkdata/export.html): metadata first, a SMART Backend Services token,
 * kick-off (GET and POST), polling that honours Retry-After, NDJSON downloads counted against what
 * was loaded, and the status deletion.
 */
describe('Bulk Data IG flow of the SMART bulk-data-client (e2e)', () => {
  let t: TestApp;
  let client: TestClient;
  let users: TestUser[];
  const keys = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const loaded = { Patient: 0, Observation: 0 };
  const bulkBase = '/bulk-data/r4';

  const tokenFor = async (): Promise<string> => {
    const smart = await request(t.server).get(`${bulkBase}/.well-known/smart-configuration`).expect(200);
    const tokenUrl = smart.body.token_endpoint as string;
    const now = Math.floor(Date.now() / 1000);
    const assertion = sign(
      { iss: client.client_id, sub: client.client_id, aud: tokenUrl, jti: randomUUID(), exp: now + 300 },
      keys.privateKey,
      { algorithm: 'RS384', keyid: 'k1' },
    );
    const res = await request(t.server)
      .post(new URL(tokenUrl).pathname)
      .type('form')
      .send({
        scope: 'system/*.read',
        grant_type: 'client_credentials',
        client_assertion_type: 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer',
        client_assertion: assertion,
      })
      .expect(200);
    return res.body.access_token as string;
  };

  /** Polls the status URL as the client does: waits Retry-After between 202s; returns the manifest. */
  const waitForManifest = async (statusUrl: string, token: string) => {
    const path = new URL(statusUrl).pathname;
    for (let i = 0; i < 60; i++) {
      const res = await request(t.server).get(path).set(bearer(token)).set('Accept', 'application/json');
      if (res.status === 200) return res;
      expect(res.status).toBe(202);
      expect(res.headers['x-progress']).toBeDefined();
      await sleep(Number(res.headers['retry-after'] ?? 1) * 1000);
    }
    throw new Error('export did not complete');
  };

  /** Downloads every file of a manifest; lines per type. */
  const download = async (manifest: any, token: string) => {
    const counts: Record<string, number> = {};
    for (const output of manifest.output) {
      const res = await request(t.server)
        .get(new URL(output.url).pathname)
        .set(bearer(token))
        .set('Accept', 'application/fhir+ndjson')
        .buffer(true)
        .parse((response, done) => {
          let text = '';
          response.on('data', (chunk: Buffer) => (text += chunk.toString('utf8')));
          response.on('end', () => done(null, text));
        })
        .expect(200);
      const lines = (res.body as string).split('\n').filter((line) => line.length > 0);
      for (const line of lines) expect(JSON.parse(line).resourceType).toBe(output.type);
      counts[output.type] = (counts[output.type] ?? 0) + lines.length;
    }
    return counts;
  };

  beforeAll(async () => {
    t = await createTestApp(IDENTITY_TEST_ENV);
    client = await createClient(t);
    users = await Promise.all([createUser(t, client), createUser(t, client)]);
    await t.app.get(BackendServicesService).setKeys(client.client_id, {
      jwks: JSON.stringify({ keys: [{ ...keys.publicKey.export({ format: 'jwk' }), kid: 'k1' }] }),
    });
    for (const [u, user] of users.entries()) {
      const entry = [];
      for (let p = 0; p < 3; p++) {
        const id = `bulk-${u}-${p}`;
        entry.push({
          resource: { resourceType: 'Patient', id },
          request: { method: 'PUT', url: `Patient/${id}` },
        });
        for (let o = 0; o < 2; o++) {
          entry.push({
            resource: {
              resourceType: 'Observation',
              status: 'final',
              code: { text: 'weight' },
              subject: { reference: `Patient/${id}` },
            },
            request: { method: 'POST', url: 'Observation' },
          });
        }
      }
      const res = await request(t.server)
        .post('/r4')
        .set(bearer(user.access_token))
        .set('Content-Type', 'application/fhir+json')
        .send(JSON.stringify({ resourceType: 'Bundle', type: 'transaction', entry }))
        .expect(200);
      expect(res.body.entry.every((e: any) => e.response.status === '201 Created')).toBe(true);
      loaded.Patient += 3;
      loaded.Observation += 6;
    }
  });
  afterAll(async () => t?.close());

  it('metadata first, then token, GET kick-off, polling, downloads matching what was loaded', async () => {
    const metadata = await request(t.server)
      .get(`${bulkBase}/metadata`)
      .set('Accept', 'application/fhir+json')
      .expect(200);
    expect(metadata.body.instantiates).toContain(
      'http://hl7.org/fhir/uv/bulkdata/CapabilityStatement/bulk-data',
    );
    expect(
      validateResource('r4', metadata.body, 'CapabilityStatement').filter((i) => i.severity === 'error'),
    ).toEqual([]);
    const token = await tokenFor();
    const kickOff = await request(t.server)
      .get(`${bulkBase}/Patient/$export?_type=Patient,Observation`)
      .set(bearer(token))
      .set('Accept', 'application/fhir+json')
      .set('Prefer', 'respond-async')
      .expect(202);
    expect(kickOff.headers['content-type']).toBe('application/fhir+json; charset=utf-8');
    expect(kickOff.body.resourceType).toBe('OperationOutcome');
    const statusUrl = kickOff.headers['content-location'];
    expect(statusUrl).toMatch(/\/bulk-data\/r4\/\$export-status\//);
    const complete = await waitForManifest(statusUrl, token);
    expect(complete.headers.expires).toBeDefined();
    expect(new Date(complete.headers.expires).getTime()).toBeGreaterThan(Date.now());
    const manifest = complete.body;
    expect(manifest).toMatchObject({ requiresAccessToken: true, error: [] });
    expect(await download(manifest, token)).toEqual(loaded);
    // deletion: 202, then the status is gone
    const path = new URL(statusUrl).pathname;
    await request(t.server).delete(path).set(bearer(token)).expect(202);
    await request(t.server).get(path).set(bearer(token)).expect(404);
  });

  it('POST kick-off with a Parameters body (_type, _since, _outputFormat; patient on Patient export)', async () => {
    const token = await tokenFor();
    const parameters = {
      resourceType: 'Parameters',
      parameter: [
        { name: '_type', valueString: 'Observation' },
        { name: '_since', valueInstant: '2000-01-01T00:00:00Z' },
        { name: '_outputFormat', valueString: 'application/fhir+ndjson' },
      ],
    };
    const kickOff = await request(t.server)
      .post(`${bulkBase}/$export`)
      .set(bearer(token))
      .set('Content-Type', 'application/fhir+json')
      .set('Prefer', 'respond-async')
      .send(JSON.stringify(parameters))
      .expect(202);
    const manifest = (await waitForManifest(kickOff.headers['content-location'], token)).body;
    expect(manifest.request).toContain('/bulk-data/r4/$export');
    expect(await download(manifest, token)).toEqual({ Observation: loaded.Observation });

    const one = {
      resourceType: 'Parameters',
      parameter: [
        { name: 'patient', valueReference: { reference: 'Patient/bulk-0-1' } },
        { name: '_type', valueString: 'Patient,Observation' },
      ],
    };
    const patientKickOff = await request(t.server)
      .post(`${bulkBase}/Patient/$export`)
      .set(bearer(token))
      .set('Content-Type', 'application/fhir+json')
      .set('Prefer', 'respond-async')
      .send(JSON.stringify(one))
      .expect(202);
    const patientManifest = (await waitForManifest(patientKickOff.headers['content-location'], token)).body;
    expect(await download(patientManifest, token)).toEqual({ Patient: 1, Observation: 2 });
  });

  it('bad kick-offs answer an OperationOutcome: unknown _type, patient on a system export, not Parameters', async () => {
    const token = await tokenFor();
    const post = (path: string, body: unknown) =>
      request(t.server)
        .post(path)
        .set(bearer(token))
        .set('Content-Type', 'application/fhir+json')
        .set('Prefer', 'respond-async')
        .send(JSON.stringify(body));
    const unknownType = await post(`${bulkBase}/$export`, {
      resourceType: 'Parameters',
      parameter: [{ name: '_type', valueString: 'Nonsense' }],
    }).expect(400);
    expect(unknownType.body.resourceType).toBe('OperationOutcome');
    await post(`${bulkBase}/$export`, {
      resourceType: 'Parameters',
      parameter: [{ name: 'patient', valueReference: { reference: 'Patient/bulk-0-1' } }],
    }).expect(400);
    await post(`${bulkBase}/$export`, { resourceType: 'Patient' }).expect(400);
  });
});
