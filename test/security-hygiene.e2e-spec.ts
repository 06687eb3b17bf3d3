import { get } from 'http';
import type { AddressInfo } from 'net';
import { Logger } from '@nestjs/common';
import { sign } from 'jsonwebtoken';
import request from 'supertest';
import {
  bearer,
  clientHeaders,
  createClient,
  createTestApp,
  createUser,
  IDENTITY_TEST_ENV,
  TestApp,
  TestClient,
  TestUser,
} from '@app/testing';
import { loadSigningKey } from '../src/modules/auth/tokens/signing-key';

/** Issue 16 item 7: caching headers, forged-token shapes, URL length, paging parameters. */
describe('security: response hygiene (e2e)', () => {
  let t: TestApp;
  let client: TestClient;
  let user: TestUser;
  beforeAll(async () => {
    t = await createTestApp({ ...IDENTITY_TEST_ENV, DIRECTORY_SEED: 'false' });
    client = await createClient(t);
    user = await createUser(t, client);
  });
  afterAll(async () => t?.close());

  const creds = () => ({ client_id: client.client_id, client_secret: client.client_secret });

  it('Cache-Control: no-store where a token, code or secret is answered (errors too); private on FHIR data', async () => {
    const noStore = (res: request.Response) =>
      expect([res.status, res.headers['cache-control'], res.headers.pragma]).toEqual([
        res.status,
        'no-store',
        'no-cache',
      ]);
    noStore(
      await request(t.server)
        .post('/user-management/v1/user')
        .send({ ...creds(), app_user_id: 'cc' }),
    );
    noStore(
      await request(t.server)
        .post('/user-management/v1/user/auth-code')
        .send({ ...creds(), app_user_id: user.app_user_id })
        .expect(200),
    );
    noStore(
      await request(t.server).post('/user-management/v1/user').send({ client_id: 'x', client_secret: 'y' }),
    );
    noStore(
      await request(t.server)
        .post('/oauth2/token')
        .type('form')
        .send({ grant_type: 'refresh_token', refresh_token: user.refresh_token, ...creds() })
        .expect(200),
    );
    noStore(await request(t.server).get('/bulk-data/r4/$export').set(bearer(user.access_token)).expect(200));
    for (const path of ['/r4/Patient', '/r4/Patient/nope', '/r4/metadata']) {
      const res = await request(t.server).get(path).set(bearer(user.access_token));
      expect({ path, cc: res.headers['cache-control'] }).toEqual({ path, cc: 'private' });
    }
  });

  it('an access token without exp, or with a non-canonical sub, is refused (401)', async () => {
    const key = loadSigningKey(t.settings.jwt.privateKeyPem, t.settings.dataDir, new Logger('test'));
    const forge = (claims: Record<string, unknown>, expiresIn?: number) =>
      sign(
        {
          token_use: 'access',
          sub_type: 'user',
          client_id: client.client_id,
          scope: 'user/*.*',
          jti: 'j',
          ...claims,
        },
        key.privateKey,
        {
          algorithm: 'RS256',
          keyid: key.kid,
          issuer: t.settings.jwt.issuer,
          audience: t.settings.jwt.audience,
          ...(expiresIn ? { expiresIn } : {}),
        },
      );
    const read = (token: string) => request(t.server).get('/r4/Patient').set(bearer(token));
    // the forging works: the canonical form with exp is accepted …
    await read(forge({ sub: String(user.service_user_id) }, 60)).expect(200);
    // … and these are not
    await read(forge({ sub: String(user.service_user_id) })).expect(401);
    await read(forge({ sub: `0x${user.service_user_id.toString(16)}` }, 60)).expect(401);
    await read(forge({ sub: `0${user.service_user_id}` }, 60)).expect(401);
    await read(forge({ sub: `${user.service_user_id}.0` }, 60)).expect(401);
  });

  it('a URL over MAX_URL_LENGTH → 414, also beyond Node’s header limit (100 KB), never a reset', async () => {
    const mid = await request(t.server)
      .get(`/r4/Patient?name=${'a'.repeat(10_000)}`)
      .set(bearer(user.access_token));
    expect(mid.status).toBe(414);
    expect(mid.body.resourceType).toBe('OperationOutcome');
    expect(mid.body.issue[0].code).toBe('too-long');
    const dstu2 = await request(t.server)
      .get(`/dstu2/Patient?name=${'a'.repeat(10_000)}`)
      .set(bearer(user.access_token));
    expect(dstu2.status).toBe(414);
    expect(dstu2.headers['content-type']).toBe('application/json+fhir; charset=utf-8');
    const server = t.app.getHttpServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const { port } = server.address() as AddressInfo;
      // in each version's media type (DSTU2: https://hl7.org/fhir/DSTU2/http.html#mime-type)
      for (const [path, fhir, type] of [
        [`/r4/Patient?name=${'a'.repeat(100_000)}`, true, 'application/fhir+json'],
        [`/dstu2/Patient?name=${'a'.repeat(100_000)}`, true, 'application/json+fhir'],
        [`/api/search?query=${'b'.repeat(1_000_000)}`, false, 'application/json'],
      ] as const) {
        const answer = await new Promise<{ status: number; body: string; type?: string }>(
          (resolve, reject) => {
            const req = get({ host: '127.0.0.1', port, path }, (res) => {
              let body = '';
              res.on('data', (c: Buffer) => (body += c.toString()));
              res.on('end', () =>
                resolve({ status: res.statusCode ?? 0, body, type: res.headers['content-type'] }),
              );
            });
            req.on('error', reject);
          },
        );
        expect(answer.status).toBe(414);
        expect(answer.type).toBe(`${type}; charset=utf-8`);
        const body = JSON.parse(answer.body);
        if (fhir) expect(body.issue[0].code).toBe('too-long');
        else expect(body).toEqual({ error: 'uri_too_long', message: expect.stringMatching(/at most 8192/) });
      }
      // a header (not the URL) over the limit is 431
      const big = await new Promise<number>((resolve, reject) => {
        const req = get(
          { host: '127.0.0.1', port, path: '/health', headers: { 'x-big': 'c'.repeat(20_000) } },
          (res) => {
            res.resume();
            resolve(res.statusCode ?? 0);
          },
        );
        req.on('error', reject);
      });
      expect(big).toBe(431);
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it('offset, limit, _count, _skip and _offset are read the same way on every route', async () => {
    const user2 = clientHeaders(client, user.service_user_id);
    const cases: Array<[request.Test, RegExp]> = [
      [
        request(t.server).get('/connect/system/clinical').query({ offset: '-1' }).set(creds()),
        /offset must be a non-negative integer/,
      ],
      [
        request(t.server).post('/api/search').query({ offset: '-1' }).set(bearer(user.access_token)),
        /offset must be a non-negative integer/,
      ],
      [
        request(t.server)
          .get('/user-management/v1/user')
          .query({ offset: '-1' })
          .set(clientHeaders(client, 'client')),
        /offset must be a non-negative integer/,
      ],
      [
        request(t.server)
          .get('/user-management/v1/user')
          .query({ limit: '1e2' })
          .set(clientHeaders(client, 'client')),
        /limit must be an integer from 1 to 500/,
      ],
      [
        request(t.server).get('/r4/Patient').query({ _skip: '-1' }).set(user2),
        /_skip must be a non-negative integer/,
      ],
      [
        request(t.server)
          .get('/directory/r4/Organization')
          .query({ _offset: '-1' })
          .set(bearer(user.access_token)),
        /_offset must be a non-negative integer/,
      ],
    ];
    for (const [req, message] of cases) {
      const res = await req;
      const text = res.body.issue?.[0]?.diagnostics ?? res.body.message;
      expect({ status: res.status, text }).toEqual({ status: 400, text: expect.stringMatching(message) });
    }
    // and a good offset pages the clinical list like /api/search
    await request(t.server).get('/connect/system/clinical').query({ offset: '0' }).set(creds()).expect(200);
  });
});
