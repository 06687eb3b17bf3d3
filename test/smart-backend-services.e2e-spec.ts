import { generateKeyPairSync, randomUUID, type KeyObject } from 'crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'fs';
import { createServer, type Server } from 'http';
import type { AddressInfo } from 'net';
import { tmpdir } from 'os';
import { join } from 'path';
import { sign } from 'jsonwebtoken';
import request from 'supertest';
import {
  bearer,
  createClient,
  createTestApp,
  createUser,
  IDENTITY_TEST_ENV,
  runCliInProcess,
  TestApp,
  TestClient,
} from '@app/testing';

/** SMART Backend Services (https://hl7.org/fhir/smart-app-launch/backend-services.html). */
describe('SMART Backend Services (e2e)', () => {
  let t: TestApp;
  let client: TestClient;
  let other: TestClient;
  let tokenUrl: string;
  let dir: string;
  let jwksServer: Server;
  const rsa = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const ec = generateKeyPairSync('ec', { namedCurve: 'P-384' });
  const stranger = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const jwk = (key: KeyObject, kid: string) => ({ ...key.export({ format: 'jwk' }), kid, use: 'sig' });

  const assertion = (
    clientId: string,
    opts: { key?: KeyObject; alg?: string; kid?: string; aud?: string; exp?: number; jti?: string } = {},
  ) =>
    sign(
      {
        iss: clientId,
        sub: clientId,
        aud: opts.aud ?? tokenUrl,
        jti: opts.jti ?? randomUUID(),
        exp: opts.exp ?? Math.floor(Date.now() / 1000) + 240,
      },
      opts.key ?? rsa.privateKey,
      { algorithm: (opts.alg ?? 'RS384') as 'RS384', keyid: opts.kid ?? 'rsa-1' },
    );
  const tokenRequest = (jwt: string, scope = 'system/*.rs') =>
    request(t.server).post('/oauth2/token').type('form').send({
      grant_type: 'client_credentials',
      scope,
      client_assertion_type: 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer',
      client_assertion: jwt,
    });

  beforeAll(async () => {
    t = await createTestApp(IDENTITY_TEST_ENV);
    tokenUrl = `${t.settings.urls.auth}/oauth2/token`;
    [client, other] = await Promise.all([createClient(t), createClient(t)]);
    dir = mkdtempSync(join(tmpdir(), 'jwks-'));
    const file = join(dir, 'jwks.json');
    writeFileSync(file, JSON.stringify({ keys: [jwk(rsa.publicKey, 'rsa-1')] }));
    const run = await runCliInProcess(t, ['client', 'set-jwks', client.client_id, file]);
    expect(JSON.parse(run.stdout)).toEqual({ client_id: client.client_id, jwks: 'registered' });
    // the other client publishes its keys at a URL
    jwksServer = createServer((_req, res) => {
      res.setHeader('Content-Type', 'application/json');
      res.end(JSON.stringify({ keys: [jwk(ec.publicKey, 'ec-1')] }));
    });
    await new Promise<void>((resolve) => jwksServer.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(jwksServer.address() as AddressInfo).port}/jwks.json`;
    await runCliInProcess(t, ['client', 'set-jwks', other.client_id, url]);
  });
  afterAll(async () => {
    rmSync(dir, { recursive: true, force: true });
    await new Promise((resolve) => jwksServer?.close(resolve));
    await t?.close();
  });

  it('a signed assertion gets a client-level read-only token covering every user of the client', async () => {
    const [alice, bob] = await Promise.all([createUser(t, client), createUser(t, client)]);
    for (const [user, id] of [
      [alice, 'bs-a'],
      [bob, 'bs-b'],
    ] as const) {
      await request(t.server)
        .put(`/r4/Patient/${id}`)
        .set(bearer(user.access_token))
        .set('Content-Type', 'application/fhir+json')
        .send(JSON.stringify({ resourceType: 'Patient', id }))
        .expect(201);
    }
    const res = await tokenRequest(assertion(client.client_id)).expect(200);
    expect(res.body).toMatchObject({ token_type: 'Bearer', scope: 'system/*.rs' });
    expect(res.headers['cache-control']).toBe('no-store');
    const token = res.body.access_token as string;
    const search = await request(t.server).get('/r4/Patient').set(bearer(token)).expect(200);
    expect(search.body.entry.map((e: any) => e.resource.id).sort()).toEqual(['bs-a', 'bs-b']);
    await request(t.server)
      .post('/r4/Patient')
      .set(bearer(token))
      .set('Content-Type', 'application/fhir+json')
      .send(JSON.stringify({ resourceType: 'Patient' }))
      .expect(403);
  });

  it('JWKS by URL and ES384', async () => {
    const res = await tokenRequest(
      assertion(other.client_id, { key: ec.privateKey, alg: 'ES384', kid: 'ec-1' }),
      'system/*.read',
    ).expect(200);
    expect(res.body.scope).toBe('system/*.read');
  });

  it('a reused jti → 401 invalid_client, also when sent concurrently (exactly one wins)', async () => {
    const once = assertion(client.client_id);
    await tokenRequest(once).expect(200);
    const again = await tokenRequest(once).expect(401);
    expect(again.body.error).toBe('invalid_client');
    const racing = assertion(client.client_id);
    const results = await Promise.all(Array.from({ length: 6 }, () => tokenRequest(racing)));
    expect(results.map((r) => r.status).sort()).toEqual([200, 401, 401, 401, 401, 401]);
  });

  it('expired, too long-lived, unregistered key, unexpected algorithm, wrong aud → 401 invalid_client', async () => {
    const now = Math.floor(Date.now() / 1000);
    const bad = [
      assertion(client.client_id, { exp: now - 120 }),
      assertion(client.client_id, { exp: now + 3600 }),
      assertion(client.client_id, { key: stranger.privateKey }),
      assertion(client.client_id, { alg: 'RS256' }),
      assertion(client.client_id, { aud: 'https://elsewhere.example/token' }),
      sign({ iss: client.client_id, sub: client.client_id, aud: tokenUrl, jti: randomUUID() }, 'secret', {
        algorithm: 'HS256',
        expiresIn: 60,
      }),
      assertion(other.client_id), // RSA key of another client: other registered an EC key only
    ];
    for (const jwt of bad) {
      const res = await tokenRequest(jwt);
      expect({ status: res.status, error: res.body.error }).toEqual({ status: 401, error: 'invalid_client' });
    }
    const scope = await tokenRequest(assertion(client.client_id), 'user/*.*').expect(400);
    expect(scope.body.error).toBe('invalid_scope');
  });

  it('a malformed assertion form → 400 invalid_request: wrong or repeated type, missing or oversize assertion', async () => {
    const JWT_BEARER = 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer';
    const send = (body: string) =>
      request(t.server)
        .post('/oauth2/token')
        .set('Content-Type', 'application/x-www-form-urlencoded')
        .send(body);
    const form = (fields: Record<string, string>) =>
      new URLSearchParams({ grant_type: 'client_credentials', ...fields }).toString();
    for (const [body, description] of [
      [form({ client_assertion_type: 'urn:other', client_assertion: 'x' }), /client_assertion_type must be/],
      [
        `${form({ client_assertion_type: JWT_BEARER })}&client_assertion_type=x&client_assertion=y`,
        /given once/,
      ],
      [form({ client_assertion_type: JWT_BEARER }), /^client_assertion is required$/],
      [form({ client_assertion_type: JWT_BEARER, client_assertion: '' }), /^client_assertion is required$/],
      [
        form({ client_assertion_type: JWT_BEARER, client_assertion: 'a'.repeat(8193) }),
        /^client_assertion is longer than 8192 characters$/,
      ],
    ] as const) {
      const res = await send(body);
      expect([res.status, res.body]).toEqual([
        400,
        { error: 'invalid_request', error_description: expect.stringMatching(description) },
      ]);
    }
  });

  it('set-jwks refuses a private key and an unknown client', async () => {
    const file = join(dir, 'private.json');
    writeFileSync(file, JSON.stringify({ keys: [rsa.privateKey.export({ format: 'jwk' })] }));
    await expect(runCliInProcess(t, ['client', 'set-jwks', client.client_id, file])).rejects.toThrow(
      /private key/,
    );
    await expect(runCliInProcess(t, ['client', 'set-jwks', 'nobody', file])).rejects.toThrow(/unknown/);
  });

  it('an assertion with a crit header → 401 invalid_client (RFC 7515 §4.1.11)', async () => {
    const jwt = sign(
      { iss: client.client_id, sub: client.client_id, aud: tokenUrl, jti: randomUUID() },
      rsa.privateKey,
      { algorithm: 'RS384', keyid: 'rsa-1', expiresIn: 120, header: { alg: 'RS384', crit: ['exp'] } },
    );
    const res = await tokenRequest(jwt).expect(401);
    expect(res.body.error).toBe('invalid_client');
    expect(res.body.error_description).toMatch(/crit/);
  });

  it('the program gates of secrets apply: a patient-access client gets no client-level token', async () => {
    const patientOnly = await createClient(t, { programs: ['patient-access'] });
    const file = join(dir, 'patient-only.json');
    writeFileSync(file, JSON.stringify({ keys: [jwk(rsa.publicKey, 'rsa-1')] }));
    await runCliInProcess(t, ['client', 'set-jwks', patientOnly.client_id, file]);
    const res = await tokenRequest(assertion(patientOnly.client_id), 'bulk-data').expect(400);
    expect(res.body.error).toBe('unauthorized_client');
    // at a realm: that realm's programs (dev-portal: provider-access or p2p)
    const epaOnly = await createClient(t, { programs: ['epa'] });
    await runCliInProcess(t, ['client', 'set-jwks', epaOnly.client_id, file]);
    const realmUrl = `${t.settings.urls.auth}/auth/realms/dev-portal/protocol/openid-connect/token`;
    const atRealm = (clientId: string) =>
      request(t.server)
        .post('/auth/realms/dev-portal/protocol/openid-connect/token')
        .type('form')
        .send({
          grant_type: 'client_credentials',
          scope: 'bulk-data',
          client_assertion_type: 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer',
          client_assertion: assertion(clientId, { aud: realmUrl }),
        });
    expect((await atRealm(epaOnly.client_id)).body.error).toBe('unauthorized_client');
    await atRealm(client.client_id).expect(200);
    // the same epa-only client at /oauth2/token: epa gives client-level tokens
    await tokenRequest(assertion(epaOnly.client_id), 'bulk-data').expect(200);
  });

  describe('a key-set URL serving 100 MB', () => {
    let flood: Server;
    let floodUrl: string;
    const seen = { requests: 0, bytes: 0 };
    let victim: TestClient;
    const chunk = Buffer.alloc(64 * 1024, 0x20);

    beforeAll(async () => {
      flood = createServer((_req, res) => {
        seen.requests += 1;
        res.writeHead(200, { 'Content-Type': 'application/json' });
        let sent = 0;
        const pump = () => {
          while (sent < 100 * 1024 * 1024 && !res.destroyed) {
            sent += chunk.length;
            seen.bytes += chunk.length;
            if (!res.write(chunk)) return void res.once('drain', pump);
          }
          res.end();
        };
        pump();
      });
      await new Promise<void>((resolve) => flood.listen(0, '127.0.0.1', resolve));
      floodUrl = `http://127.0.0.1:${(flood.address() as AddressInfo).port}/keys.json`;
      victim = await createClient(t);
      await runCliInProcess(t, ['client', 'set-jwks', victim.client_id, floodUrl]);
    });
    afterAll(async () => {
      flood.closeAllConnections();
      await new Promise((resolve) => flood.close(resolve));
    });

    it('assertions failing a check that needs no key never make the server fetch it', async () => {
      const now = Math.floor(Date.now() / 1000);
      for (const jwt of [
        assertion(victim.client_id, { exp: now - 120 }),
        assertion(victim.client_id, { aud: 'https://elsewhere.example/token' }),
        assertion(victim.client_id, { alg: 'RS256' }),
      ]) {
        await tokenRequest(jwt).expect(401);
      }
      expect(seen.requests).toBe(0);
    });

    it('forged assertions: one bounded read, its failure cached, the caller told nothing of the URL', async () => {
      const answers = await Promise.all(
        Array.from({ length: 4 }, () =>
          tokenRequest(assertion(victim.client_id, { key: stranger.privateKey })),
        ),
      );
      await new Promise((r) => setTimeout(r, 100));
      expect(seen.requests).toBe(1);
      expect(seen.bytes).toBeLessThan(16 * 1024 * 1024);
      for (const res of answers) {
        expect({ status: res.status, error: res.body.error }).toEqual({
          status: 401,
          error: 'invalid_client',
        });
        expect(JSON.stringify(res.body)).not.toMatch(/127\.0\.0\.1|keys\.json|bytes|200/);
      }
      await tokenRequest(assertion(victim.client_id, { key: stranger.privateKey })).expect(401);
      expect(seen.requests).toBe(1);
    });

    it('set-jwks refuses a URL with credentials', async () => {
      await expect(
        runCliInProcess(t, [
          'client',
          'set-jwks',
          victim.client_id,
          'https://user:pw@keys.example/jwks.json',
        ]),
      ).rejects.toThrow(/credentials/);
    });
  });

  it('advertised in smart-configuration', async () => {
    const res = await request(t.server).get('/.well-known/smart-configuration').expect(200);
    expect(res.body.token_endpoint).toBe(tokenUrl);
    expect(res.body.grant_types_supported).toContain('client_credentials');
    expect(res.body.token_endpoint_auth_methods_supported).toContain('private_key_jwt');
    expect(res.body.token_endpoint_auth_signing_alg_values_supported).toEqual(['RS384', 'ES384']);
    expect(res.body.scopes_supported).toEqual(expect.arrayContaining(['system/*.rs', 'system/*.read']));
  });
});
