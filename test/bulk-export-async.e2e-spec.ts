import request from 'supertest';
import {
  bearer,
  clientHeaders,
  clientToken,
  createClient,
  createTestApp,
  createUser,
  IDENTITY_TEST_ENV,
  TestApp,
  TestClient,
  TestUser,
  linkPath,
} from '@app/testing';

type Headers = Record<string, string>;
type Json = Record<string, any>;

/**
 * The Bulk Data IG async flow (https://hl7.org/fhir/uv/bulkdata/export.html), spoken exactly as
 * the SMART bulk-data-client does: kick-off with `Accept: application/fhir+json` and
 * `Prefer: respond-async` → 202 + Content-Location; poll honouring Retry-After while 202 (with
 * X-Progress); 200 → manifest; download every file with the access token (requiresAccessToken).
 */
describe('bulk export async flow (e2e, Bulk Data IG client)', () => {
  let t: TestApp;
  let client: TestClient;
  let other: TestClient;
  let alice: TestUser;
  const local = linkPath;

  beforeAll(async () => {
    t = await createTestApp({ ...IDENTITY_TEST_ENV, EXPORT_FILE_MAX_RESOURCES: '3' });
    client = await createClient(t, { customer: 'async-co', programs: ['provider-access'] });
    other = await createClient(t);
    alice = await createUser(t, client);
    const resources: Json[] = [{ resourceType: 'Patient', id: 'p1' }];
    for (let i = 0; i < 7; i += 1) {
      resources.push({
        resourceType: 'Observation',
        id: `obs-${i}`,
        status: 'final',
        code: { text: 'pulse' },
        subject: { reference: 'Patient/p1' },
      });
    }
    for (const r of resources) {
      await request(t.server)
        .put(`/r4/${r.resourceType}/${r.id}`)
        .set(bearer(alice.access_token))
        .set('Content-Type', 'application/fhir+json')
        .send(JSON.stringify(r))
        .expect((res) => expect(res.status).toBeLessThan(300));
    }
  }, 60_000);
  afterAll(async () => t?.close());

  const kickOffHeaders = (auth: Headers): Headers => ({
    ...auth,
    Accept: 'application/fhir+json',
    Prefer: 'respond-async',
  });

  /** What bulk-data-client does between kick-off and download. */
  async function exportLikeAClient(
    kickOffPath: string,
    auth: Headers,
  ): Promise<{ manifest: Json; files: Json[][] }> {
    const kickOff = await request(t.server).get(kickOffPath).set(kickOffHeaders(auth));
    expect(kickOff.status).toBe(202);
    const statusUrl = kickOff.headers['content-location'];
    expect(statusUrl).toMatch(/^https?:\/\/.+\/\$export-status\/[0-9a-f]{32}$/);
    let manifest: Json | undefined;
    for (let attempt = 0; attempt < 50 && !manifest; attempt += 1) {
      const status = await request(t.server)
        .get(local(statusUrl))
        .set(auth)
        .set('Accept', 'application/json');
      if (status.status === 202) {
        expect(status.headers['x-progress']).toBeDefined();
        const retryAfter = Number(status.headers['retry-after'] ?? '1');
        await new Promise((r) => setTimeout(r, Math.min(retryAfter, 1) * 200));
        continue;
      }
      expect(status.status).toBe(200);
      expect(status.headers['content-type']).toMatch(/^application\/json/);
      manifest = status.body as Json;
    }
    if (!manifest) throw new Error('the export did not complete');
    expect(manifest.requiresAccessToken).toBe(true);
    expect(manifest.error).toEqual([]);
    expect(manifest.request).toContain(kickOffPath.split('?')[0]);
    const files: Json[][] = [];
    for (const output of manifest.output as Array<{ type: string; url: string; count: number }>) {
      const res = await request(t.server)
        .get(local(output.url))
        .set(auth)
        .set('Accept', 'application/fhir+ndjson')
        .buffer(true)
        .parse((r, cb) => {
          let text = '';
          r.on('data', (c: Buffer) => (text += c.toString('utf8')));
          r.on('end', () => cb(null, text));
        });
      expect(res.status).toBe(200);
      const lines = (res.body as string)
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l) as Json);
      expect(lines).toHaveLength(output.count);
      expect(lines.every((r) => r.resourceType === output.type)).toBe(true);
      files.push(lines);
    }
    return { manifest, files };
  }

  it('system export on the analytics host with a user token', async () => {
    const { manifest, files } = await exportLikeAClient(
      '/bulk-data/r4/$export?_type=Patient,Observation',
      bearer(alice.access_token),
    );
    expect(manifest.output.map((o: Json) => `${o.type}:${o.count}`)).toEqual([
      'Observation:3',
      'Observation:3',
      'Observation:1',
      'Patient:1',
    ]);
    const ids = files.flat().map((r) => `${r.resourceType}/${r.id}`);
    expect(new Set(ids).size).toBe(8);
  });

  it('/r4/Patient/$export and /r4/$export on the base host with client headers', async () => {
    const headers = clientHeaders(client, 'client');
    const patient = await exportLikeAClient('/r4/Patient/$export?_type=Observation', headers);
    expect(patient.files.flat()).toHaveLength(7);
    const system = await exportLikeAClient('/r4/$export?_outputFormat=application%2Ffhir%2Bndjson', headers);
    expect(system.manifest.output.length).toBeGreaterThan(0);
  });

  it('population export on the gateway host with a program client token', async () => {
    const token = await clientToken(t, client, { realm: 'dev-portal', scope: 'bulk-data user/*.rs' });
    const { files } = await exportLikeAClient(
      '/v1/async-co/bulk-export/bulk-data/r4/$export?_type=Patient',
      bearer(token),
    );
    expect(files.flat().map((r) => r.id)).toEqual(['p1']);
  });

  it('DELETE on the status URL cancels: 202, then the status is 404', async () => {
    const auth = bearer(alice.access_token);
    const kickOff = await request(t.server)
      .get('/bulk-data/r4/$export')
      .set(kickOffHeaders(auth))
      .expect(202);
    const statusPath = local(kickOff.headers['content-location']);
    await request(t.server).delete(statusPath).set(auth).expect(202);
    const gone = await request(t.server).get(statusPath).set(auth);
    expect(gone.status).toBe(404);
    expect(gone.body.resourceType).toBe('OperationOutcome');
    await request(t.server).delete(statusPath).set(auth).expect(404);
  });

  it('another tenant cannot read or cancel a job; an unknown job → 404', async () => {
    const auth = bearer(alice.access_token);
    const kickOff = await request(t.server)
      .get('/bulk-data/r4/$export')
      .set(kickOffHeaders(auth))
      .expect(202);
    const statusPath = local(kickOff.headers['content-location']);
    await request(t.server).get(statusPath).set(clientHeaders(other, 'client')).expect(404);
    await request(t.server).delete(statusPath).set(clientHeaders(other, 'client')).expect(404);
    await request(t.server)
      .get('/bulk-data/r4/$export-status/0123456789abcdef0123456789abcdef')
      .set(auth)
      .expect(404);
    // the owner still has it
    const mine = await request(t.server).get(statusPath).set(auth);
    expect([200, 202]).toContain(mine.status);
  });

  it('kick-off errors are immediate 4xx OperationOutcomes: unknown _type, bad _since, missing Group, unsupported parameter', async () => {
    const auth = kickOffHeaders(bearer(alice.access_token));
    for (const [path, status] of [
      ['/bulk-data/r4/$export?_type=Nope', 400],
      ['/bulk-data/r4/$export?_since=tomorrow', 400],
      ['/r4/Group/missing/$export', 404],
      ['/bulk-data/r4/$export?_typeFilter=Observation%3Fcode%3Dx', 400],
      ['/bulk-data/r4/$export?_outputFormat=text%2Fcsv', 400],
    ] as const) {
      const res = await request(t.server).get(path).set(auth);
      expect(res.status).toBe(status);
      expect(res.body.resourceType).toBe('OperationOutcome');
    }
    // Prefer: handling=lenient ignores unsupported parameters
    await request(t.server)
      .get('/bulk-data/r4/$export?_typeFilter=Observation%3Fcode%3Dx')
      .set({ ...auth, Prefer: 'respond-async, handling=lenient' })
      .expect(202);
  });
});
