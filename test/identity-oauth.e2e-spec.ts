import { createPublicKey, createVerify } from 'crypto';
import request from 'supertest';
import {
  createClient,
  createTestApp,
  createUser,
  IDENTITY_TEST_ENV,
  TestApp,
  TestClient,
} from '@app/testing';

const TOKEN = '/oauth2/token';
const AUTH_CODE = '/user-management/v1/user/auth-code';

function decode(jwt: string): { header: Record<string, unknown>; payload: Record<string, unknown> } {
  const [h, p] = jwt.split('.');
  return {
    header: JSON.parse(Buffer.from(h, 'base64url').toString()),
    payload: JSON.parse(Buffer.from(p, 'base64url').toString()),
  };
}

describe('identity: authorization codes and /oauth2/token (e2e)', () => {
  let t: TestApp;
  let a: TestClient;
  let b: TestClient;
  beforeAll(async () => {
    t = await createTestApp({ ...IDENTITY_TEST_ENV, AUTH_CODE_TTL: '2' });
    a = await createClient(t);
    b = await createClient(t);
  });
  afterAll(async () => t?.close());

  const creds = (c: TestClient) => ({ client_id: c.client_id, client_secret: c.client_secret });
  const codeFor = async (c: TestClient, appUserId: string, scope?: string) =>
    (
      await request(t.server)
        .post(AUTH_CODE)
        .send({ app_user_id: appUserId, ...creds(c), ...(scope ? { scope } : {}) })
        .expect(200)
    ).body.code as string;
  const exchange = (c: Record<string, string>, code: string) =>
    request(t.server)
      .post(TOKEN)
      .type('form')
      .send({ grant_type: 'authorization_code', code, ...c });

  it('auth-code → token: access (RS256 JWT with sub, client_id, scope, jti, exp) and refresh', async () => {
    const user = await createUser(t, a);
    const res = await exchange(creds(a), await codeFor(a, user.app_user_id)).expect(200);
    expect(res.headers['cache-control']).toBe('no-store');
    expect(res.body).toEqual({
      access_token: expect.any(String),
      token_type: 'Bearer',
      expires_in: 7200,
      scope: 'user/*.*',
      refresh_token: expect.any(String),
    });
    const { header, payload } = decode(res.body.access_token);
    expect(header.alg).toBe('RS256');
    expect(payload).toMatchObject({
      sub: String(user.service_user_id),
      client_id: a.client_id,
      scope: 'user/*.*',
      token_use: 'access',
      jti: expect.any(String),
    });
    expect((payload.exp as number) - (payload.iat as number)).toBe(7200);
  });

  it('scope openid adds an id_token verifiable with the published JWKS; it is no access token', async () => {
    const user = await createUser(t, a);
    const res = await exchange(creds(a), await codeFor(a, user.app_user_id, 'openid')).expect(200);
    expect(res.body.scope).toBe('openid user/*.*');
    const jwks = await request(t.server).get('/.well-known/jwks.json').expect(200);
    const { header, payload } = decode(res.body.id_token);
    const jwk = jwks.body.keys.find((k: { kid: string }) => k.kid === header.kid);
    expect(jwk).toMatchObject({ kty: 'RSA', alg: 'RS256', use: 'sig' });
    const [h, p, s] = res.body.id_token.split('.');
    const ok = createVerify('RSA-SHA256')
      .update(`${h}.${p}`)
      .verify(createPublicKey({ key: jwk, format: 'jwk' }), Buffer.from(s, 'base64url'));
    expect(ok).toBe(true);
    expect(payload).toMatchObject({ sub: String(user.service_user_id), aud: a.client_id, token_use: 'id' });
    await request(t.server)
      .get('/user-management/v1/user')
      .set('Authorization', `Bearer ${res.body.id_token}`)
      .expect(401);
  });

  it('accepts JSON, the `secret` field, and HTTP Basic', async () => {
    const user = await createUser(t, a);
    await request(t.server)
      .post(TOKEN)
      .send({ grant_type: 'authorization_code', code: await codeFor(a, user.app_user_id), ...creds(a) })
      .expect(200);
    await exchange(
      { client_id: a.client_id, secret: a.client_secret },
      await codeFor(a, user.app_user_id),
    ).expect(200);
    await request(t.server)
      .post(TOKEN)
      .auth(a.client_id, a.client_secret)
      .type('form')
      .send({ grant_type: 'authorization_code', code: await codeFor(a, user.app_user_id) })
      .expect(200);
  });

  it('a code works once', async () => {
    const user = await createUser(t, a);
    const code = await codeFor(a, user.app_user_id);
    const first = await exchange(creds(a), code).expect(200);
    const again = await exchange(creds(a), code).expect(400);
    expect(again.body).toEqual({ error: 'invalid_grant', error_description: expect.any(String) });
    // RFC 6749 §4.1.2: the refresh token issued from the reused code is revoked.
    const refresh = await request(t.server)
      .post(TOKEN)
      .type('form')
      .send({ grant_type: 'refresh_token', refresh_token: first.body.refresh_token, ...creds(a) });
    expect(refresh.status).toBe(400);
    // … and so is the access token it gave.
    await request(t.server)
      .get('/r4/Patient')
      .set('Authorization', `Bearer ${first.body.access_token}`)
      .expect(401);
  });

  it("another client's code → invalid_grant, and the code still works for its client", async () => {
    const user = await createUser(t, a);
    const code = await codeFor(a, user.app_user_id);
    const res = await exchange(creds(b), code).expect(400);
    expect(res.body.error).toBe('invalid_grant');
    await exchange(creds(a), code).expect(200);
  });

  it('an expired code → invalid_grant (AUTH_CODE_TTL=2)', async () => {
    const user = await createUser(t, a);
    const code = await codeFor(a, user.app_user_id);
    await new Promise((r) => setTimeout(r, 2100));
    const res = await exchange(creds(a), code).expect(400);
    expect(res.body).toEqual({ error: 'invalid_grant', error_description: 'the code has expired' });
  });

  it('refresh rotates; reusing a rotated refresh token revokes the whole family', async () => {
    const user = await createUser(t, a);
    const refresh = (token: string) =>
      request(t.server)
        .post(TOKEN)
        .type('form')
        .send({ grant_type: 'refresh_token', refresh_token: token, ...creds(a) });
    const r1 = await refresh(user.refresh_token).expect(200);
    expect(r1.body.refresh_token).not.toBe(user.refresh_token);
    expect(decode(r1.body.access_token).payload.sub).toBe(String(user.service_user_id));
    const r2 = await refresh(r1.body.refresh_token).expect(200);
    const other = await exchange(creds(a), await codeFor(a, user.app_user_id)).expect(200);
    const read = (token: string) =>
      request(t.server).get('/r4/Patient').set('Authorization', `Bearer ${token}`);
    await read(r2.body.access_token).expect(200);
    const reuse = await refresh(user.refresh_token).expect(400);
    expect(reuse.body.error).toBe('invalid_grant');
    expect(reuse.body.error_description).toMatch(/revoked/);
    // the newest token of the family is dead too
    expect((await refresh(r2.body.refresh_token)).body.error).toBe('invalid_grant');
    // and so is every access token issued with the family (not only the refresh tokens) …
    for (const token of [user.access_token, r1.body.access_token, r2.body.access_token]) {
      const res = await read(token).expect(401);
      expect(res.headers['www-authenticate']).toMatch(/invalid_token/);
    }
    // … while the same user's tokens of another family keep working.
    await read(other.body.access_token).expect(200);
  });

  it("another client's refresh token → invalid_grant", async () => {
    const user = await createUser(t, a);
    const res = await request(t.server)
      .post(TOKEN)
      .type('form')
      .send({ grant_type: 'refresh_token', refresh_token: user.refresh_token, ...creds(b) })
      .expect(400);
    expect(res.body.error).toBe('invalid_grant');
  });

  it('RFC 6749 §5.2 errors', async () => {
    const noGrant = await request(t.server).post(TOKEN).type('form').send(creds(a)).expect(400);
    expect(noGrant.body.error).toBe('invalid_request');
    const badGrant = await request(t.server)
      .post(TOKEN)
      .type('form')
      .send({ grant_type: 'password', ...creds(a) });
    expect([badGrant.status, badGrant.body.error]).toEqual([400, 'unsupported_grant_type']);
    const cc = await request(t.server)
      .post(TOKEN)
      .type('form')
      .send({ grant_type: 'client_credentials', ...creds(a) });
    expect(cc.body.error).toBe('unsupported_grant_type');
    const noCode = await request(t.server)
      .post(TOKEN)
      .type('form')
      .send({ grant_type: 'authorization_code', ...creds(a) });
    expect([noCode.status, noCode.body.error]).toEqual([400, 'invalid_request']);
    const unknownCode = await exchange(creds(a), 'nope').expect(400);
    expect(unknownCode.body.error).toBe('invalid_grant');
    const badSecret = await exchange({ client_id: a.client_id, client_secret: 'wrong' }, 'x').expect(401);
    expect(badSecret.body.error).toBe('invalid_client');
    expect(badSecret.headers['www-authenticate']).toMatch(/^Bearer/);
    const badBasic = await request(t.server)
      .post(TOKEN)
      .auth(a.client_id, 'wrong')
      .type('form')
      .send({ grant_type: 'authorization_code', code: 'x' })
      .expect(401);
    expect(badBasic.headers['www-authenticate']).toMatch(/^Basic/);
    const noClient = await request(t.server).post(TOKEN).type('form').send({ grant_type: 'refresh_token' });
    expect([noClient.status, noClient.body.error]).toEqual([401, 'invalid_client']);
  });

  describe('request bodies: a malformed parameter → 400 invalid_request (RFC 6749 §5.2), no-store', () => {
    const invalidRequest = (res: request.Response, description: RegExp) => {
      expect([res.status, res.body]).toEqual([
        400,
        { error: 'invalid_request', error_description: expect.stringMatching(description) },
      ]);
      expect([res.headers['cache-control'], res.headers.pragma]).toEqual(['no-store', 'no-cache']);
    };
    const form = (path: string, body: string) =>
      request(t.server).post(path).set('Content-Type', 'application/x-www-form-urlencoded').send(body);
    const encoded = (fields: Record<string, string>) => new URLSearchParams(fields).toString();

    it('token: grant_type missing or empty, a parameter repeated or not a string, an oversize value', async () => {
      const c = encoded(creds(a));
      invalidRequest(await form(TOKEN, `grant_type=&${c}`), /^grant_type is required$/);
      invalidRequest(
        await form(TOKEN, `grant_type=authorization_code&grant_type=refresh_token&${c}`),
        /^grant_type must be given once, as a string$/,
      );
      invalidRequest(
        await form(TOKEN, `grant_type=authorization_code&code=x&code=y&${c}`),
        /^code must be given once, as a string$/,
      );
      invalidRequest(
        await request(t.server)
          .post(TOKEN)
          .send({ grant_type: 'refresh_token', refresh_token: 42, ...creds(a) }),
        /^refresh_token must be given once, as a string$/,
      );
      invalidRequest(
        await request(t.server)
          .post(TOKEN)
          .send({ grant_type: { $ne: null }, ...creds(a) }),
        /^grant_type must be given once, as a string$/,
      );
      invalidRequest(await exchange(creds(a), 'c'.repeat(8193)), /^code is longer than 8192 characters$/);
      invalidRequest(
        await form(TOKEN, `grant_type=refresh_token&refresh_token=r&scope=${'s'.repeat(2049)}&${c}`),
        /^scope is longer than 2048 characters$/,
      );
      // an unknown code of legal size is still the grant's business
      expect((await exchange(creds(a), 'c'.repeat(8192)).expect(400)).body.error).toBe('invalid_grant');
    });

    it('token: an empty parameter is a parameter not sent; unknown parameters are ignored', async () => {
      const user = await createUser(t, a);
      const noCode = await exchange(creds(a), '');
      expect([noCode.status, noCode.body.error_description]).toEqual([400, 'code is required']);
      const res = await form(
        TOKEN,
        encoded({
          grant_type: 'refresh_token',
          refresh_token: user.refresh_token,
          ...creds(a),
          audience: 'x',
          foo: '',
        }),
      ).expect(200);
      expect(res.body.token_type).toBe('Bearer');
    });

    it('program realm endpoint (POST and GET with a form body): the same rules', async () => {
      const realm = '/auth/realms/dev-portal/protocol/openid-connect/token';
      invalidRequest(await form(realm, `grant_type=a&grant_type=b&${encoded(creds(a))}`), /given once/);
      invalidRequest(
        await request(t.server)
          .get(realm)
          .set('Content-Type', 'application/x-www-form-urlencoded')
          .send('grant_type='),
        /^grant_type is required$/,
      );
    });

    it('introspection and revocation: token missing, repeated or oversize → 400 invalid_request', async () => {
      for (const path of ['/oauth2/introspect', '/oauth2/revoke']) {
        const c = encoded(creds(a));
        invalidRequest(await form(path, c), /^token is required$/);
        invalidRequest(await form(path, `token=&${c}`), /^token is required$/);
        invalidRequest(await form(path, `token=a&token=b&${c}`), /^token must be given once, as a string$/);
        invalidRequest(
          await form(path, `token=${'t'.repeat(8193)}&${c}`),
          /^token is longer than 8192 characters$/,
        );
      }
      // a token of legal size that is not one of ours: inactive, and nothing to revoke
      expect(
        (await form('/oauth2/introspect', encoded({ token: 'nope', ...creds(a) })).expect(200)).body,
      ).toEqual({
        active: false,
      });
      await form(
        '/oauth2/revoke',
        encoded({ token: 'nope', token_type_hint: 'access_token', ...creds(a) }),
      ).expect(200);
    });
  });

  it('auth-code: unknown user 404, bad scope 400, bad credentials 401', async () => {
    const unknown = await request(t.server)
      .post(AUTH_CODE)
      .send({ app_user_id: 'nobody', ...creds(a) })
      .expect(404);
    expect(unknown.body.error).toBe('not_found');
    const user = await createUser(t, a);
    // a user of client a is unknown to client b
    await request(t.server)
      .post(AUTH_CODE)
      .send({ app_user_id: user.app_user_id, ...creds(b) })
      .expect(404);
    const scope = await request(t.server)
      .post(AUTH_CODE)
      .send({ app_user_id: user.app_user_id, scope: 'admin', ...creds(a) })
      .expect(400);
    expect(scope.body.error).toBe('invalid_scope');
    await request(t.server)
      .post(AUTH_CODE)
      .send({ app_user_id: user.app_user_id, client_id: a.client_id, client_secret: 'x' })
      .expect(401);
  });

  it('discovery documents point at the token endpoint and JWKS', async () => {
    const oidc = await request(t.server).get('/.well-known/openid-configuration').expect(200);
    expect(oidc.body).toMatchObject({
      issuer: t.settings.jwt.issuer,
      token_endpoint: `${t.settings.urls.auth}/oauth2/token`,
      jwks_uri: `${t.settings.urls.auth}/.well-known/jwks.json`,
      id_token_signing_alg_values_supported: ['RS256'],
    });
    const smart = await request(t.server).get('/.well-known/smart-configuration').expect(200);
    expect(smart.body.token_endpoint).toBe(oidc.body.token_endpoint);
    expect(smart.body.capabilities).toContain('client-confidential-symmetric');
  });

  it('/docs-json documents the identity endpoints with their security schemes', async () => {
    const doc = (await request(t.server).get('/docs-json').expect(200)).body;
    for (const path of [
      '/user-management/v1/user',
      '/user-management/v1/user/auth-code',
      '/oauth2/token',
      '/auth/realms/{realm}/protocol/openid-connect/token',
      '/.well-known/jwks.json',
    ]) {
      expect([path, doc.paths[path] !== undefined]).toEqual([path, true]);
    }
    const list = doc.paths['/user-management/v1/user'].get;
    expect(list.security).toEqual(
      expect.arrayContaining([
        { bearer: [] },
        { client_id: [], client_secret: [], 'x-service-user-id': [] },
        { client_id: [], client_secret: [], 'x-app-user-id': [] },
      ]),
    );
    // the request DTOs describe the bodies and the list's filters, with their rules
    const schemas = doc.components.schemas;
    expect(schemas.CreateUserBody.required).toEqual(['app_user_id']);
    expect(schemas.CreateUserBody.properties.app_user_id.maxLength).toBe(256);
    expect(schemas.SignInSecretBody.properties.secret).toMatchObject({ minLength: 8, maxLength: 200 });
    expect(schemas.RenameUserBody.required).toEqual(['app_user_id', 'service_user_id']);
    expect(schemas.TokenRequestBody.required).toEqual(['grant_type']);
    expect(Object.keys(schemas.TokenRequestBody.properties)).toEqual(
      expect.arrayContaining(['code', 'refresh_token', 'redirect_uri', 'code_verifier', 'client_assertion']),
    );
    expect(schemas.TokenManagementBody.required).toEqual(['token']);
    for (const path of ['/oauth2/token', '/oauth2/introspect', '/oauth2/revoke']) {
      const body = doc.paths[path].post.requestBody.content['application/x-www-form-urlencoded'].schema;
      expect([path, body.$ref]).toEqual([
        path,
        path === '/oauth2/token'
          ? '#/components/schemas/TokenRequestBody'
          : '#/components/schemas/TokenManagementBody',
      ]);
    }
    expect(list.parameters.map((p: { name: string }) => p.name)).toEqual(
      expect.arrayContaining(['app_user_id', 'service_user_id', 'limit', 'offset']),
    );
  });
});
