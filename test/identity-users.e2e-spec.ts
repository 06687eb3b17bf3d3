import request from 'supertest';
import {
  bearer,
  clientHeaders,
  createClient,
  createTestApp,
  createUser,
  IDENTITY_TEST_ENV,
  runCliInProcess,
  TestApp,
  TestClient,
} from '@app/testing';

const USERS = '/user-management/v1/user';

describe('identity: users (e2e)', () => {
  let t: TestApp;
  let a: TestClient;
  let b: TestClient;
  beforeAll(async () => {
    t = await createTestApp(IDENTITY_TEST_ENV);
    a = await createClient(t);
    b = await createClient(t);
  });
  afterAll(async () => t?.close());

  const creds = (c: TestClient) => ({ client_id: c.client_id, client_secret: c.client_secret });

  describe('POST /user-management/v1/user', () => {
    it('creates a user with a numeric id, tokens, a code and active', async () => {
      const res = await request(t.server)
        .post(USERS)
        .send({ app_user_id: 'alice', ...creds(a) })
        .expect(200);
      expect(res.body).toEqual({
        service_user_id: expect.any(Number),
        app_user_id: 'alice',
        access_token: expect.stringMatching(/^[\w-]+\.[\w-]+\.[\w-]+$/),
        refresh_token: expect.any(String),
        code: expect.any(String),
        active: true,
      });
      const me = await request(t.server).get(USERS).set(bearer(res.body.access_token)).expect(200);
      expect(me.body.users.map((u: { app_user_id: string }) => u.app_user_id)).toEqual(['alice']);
    });

    it('accepts a form body and client headers', async () => {
      const form = await request(t.server)
        .post(USERS)
        .type('form')
        .send({ app_user_id: 'form-user', ...creds(a) })
        .expect(200);
      expect(form.body.app_user_id).toBe('form-user');
      const headers = await request(t.server)
        .post(USERS)
        .set(creds(a))
        .send({ app_user_id: 'header-user' })
        .expect(200);
      expect(headers.body.app_user_id).toBe('header-user');
    });

    it('an existing app_user_id answers 200 "this user already exists" with the same ids', async () => {
      const first = await createUser(t, a, 'bob');
      const again = await request(t.server)
        .post(USERS)
        .send({ app_user_id: 'bob', ...creds(a) })
        .expect(200);
      expect(again.body).toEqual({
        service_user_id: first.service_user_id,
        app_user_id: 'bob',
        active: true,
        message: 'this user already exists',
      });
    });

    it('the same app_user_id in another client is another user', async () => {
      const inA = await createUser(t, a, 'same-name');
      const inB = await createUser(t, b, 'same-name');
      expect(inB.service_user_id).not.toBe(inA.service_user_id);
    });

    it('service_user_id increases and concurrent creates of one name make one user', async () => {
      const results = await Promise.all(
        Array.from({ length: 12 }, () =>
          request(t.server)
            .post(USERS)
            .send({ app_user_id: 'racer', ...creds(a) }),
        ),
      );
      expect(results.map((r) => r.status)).toEqual(Array(12).fill(200));
      const ids = new Set(results.map((r) => r.body.service_user_id));
      expect(ids.size).toBe(1);
      expect(results.filter((r) => r.body.access_token).length).toBe(1);
      const list = await request(t.server)
        .get(USERS)
        .query({ app_user_id: 'racer' })
        .set(clientHeaders(a, 'client'));
      expect(list.body.total).toBe(1);
      const x = await createUser(t, a);
      const y = await createUser(t, a);
      expect(y.service_user_id).toBeGreaterThan(x.service_user_id);
    });

    it('concurrent creates of different names get distinct ids', async () => {
      const results = await Promise.all(
        Array.from({ length: 10 }, (_, i) => createUser(t, b, `parallel-${i}`)),
      );
      expect(new Set(results.map((r) => r.service_user_id)).size).toBe(10);
    });

    it('missing app_user_id → 400', async () => {
      const res = await request(t.server).post(USERS).send(creds(a)).expect(400);
      expect(res.body).toEqual({ error: 'bad_request', message: expect.stringMatching(/app_user_id/) });
    });

    it('bad or missing client credentials → 401 { error, message }', async () => {
      const wrong = await request(t.server)
        .post(USERS)
        .send({ app_user_id: 'x', client_id: a.client_id, client_secret: b.client_secret })
        .expect(401);
      expect(wrong.body.error).toBe('unauthorized');
      await request(t.server).post(USERS).send({ app_user_id: 'x' }).expect(401);
      await request(t.server)
        .post(USERS)
        .send({ app_user_id: 'x', client_id: 'nope', client_secret: a.client_secret })
        .expect(401);
    });

    it('credentials are checked before the body: a bad body with bad or no credentials → 401, never 400', async () => {
      const badBody = { app_user_id: ['not', 'a string'], service_user_id: 'x', secret: 1 };
      const wrongSecret = { client_id: a.client_id, client_secret: b.client_secret };
      const routes = [
        () => request(t.server).post(USERS),
        () => request(t.server).put(USERS),
        () => request(t.server).put(`${USERS}/sign-in-secret`),
        () => request(t.server).post(`${USERS}/auth-code`),
      ];
      for (const route of routes) {
        const none = await route().send(badBody);
        const wrong = await route().send({ ...badBody, ...wrongSecret });
        expect([none.status, none.body.error, wrong.status, wrong.body.error]).toEqual([
          401,
          'unauthorized',
          401,
          'unauthorized',
        ]);
      }
    });
  });

  describe('request bodies: every rule of the DTOs answers 400 { error, message }', () => {
    const badRequest = (res: request.Response, message: RegExp) => {
      expect([res.status, res.body]).toEqual([
        400,
        { error: 'bad_request', message: expect.stringMatching(message) },
      ]);
    };

    it('POST: app_user_id missing, of the wrong type, blank or oversize → 400; a number is its digits', async () => {
      for (const [appUserId, message] of [
        [undefined, /^app_user_id is required$/],
        [{ $ne: null }, /^app_user_id is required$/],
        [['a', 'b'], /^app_user_id is required$/],
        [true, /^app_user_id is required$/],
        ['   ', /^app_user_id is required$/],
        ['x'.repeat(257), /^app_user_id is longer than 256 characters$/],
      ] as const) {
        badRequest(
          await request(t.server)
            .post(USERS)
            .send({ ...creds(a), app_user_id: appUserId }),
          message,
        );
      }
      await request(t.server)
        .post(USERS)
        .send({ ...creds(a), app_user_id: 'x'.repeat(256) })
        .expect(200);
      const numeric = await request(t.server)
        .post(USERS)
        .send({ ...creds(a), app_user_id: 4711 })
        .expect(200);
      expect(numeric.body.app_user_id).toBe('4711');
    });

    it('unknown extra fields are ignored, as before (form and JSON)', async () => {
      await request(t.server)
        .post(USERS)
        .send({ ...creds(a), app_user_id: 'extra-json', role: 'admin', service_user_id: 1 })
        .expect(200);
      await request(t.server)
        .post(USERS)
        .type('form')
        .send({ ...creds(a), app_user_id: 'extra-form', whatever: 'x' })
        .expect(200);
    });

    it('PUT: service_user_id missing or not a positive integer → 400; the new name follows the app_user_id rule', async () => {
      const u = await createUser(t, a, 'rename-rules');
      for (const serviceUserId of [undefined, 'abc', 0, -1, 1.5, '1e3', 2 ** 53, true]) {
        badRequest(
          await request(t.server)
            .put(USERS)
            .send({ ...creds(a), app_user_id: 'n', service_user_id: serviceUserId }),
          /^service_user_id must be a positive integer$/,
        );
      }
      badRequest(
        await request(t.server)
          .put(USERS)
          .send({ ...creds(a), service_user_id: u.service_user_id }),
        /^app_user_id is required$/,
      );
      badRequest(
        await request(t.server)
          .put(USERS)
          .send({ ...creds(a), app_id_user: 'line\nbreak', service_user_id: u.service_user_id }),
        /^app_user_id contains the control character U\+000A/,
      );
      const renamed = await request(t.server)
        .put(USERS)
        .send({ ...creds(a), app_id_user: 1234, service_user_id: u.service_user_id })
        .expect(200);
      expect(renamed.body).toMatchObject({ service_user_id: u.service_user_id, app_user_id: '1234' });
    });

    it('PUT sign-in-secret: a secret not a string, or not 8 to 200 characters → 400', async () => {
      const u = await createUser(t, a, 'secret-rules');
      const put = (secret: unknown) =>
        request(t.server)
          .put(`${USERS}/sign-in-secret`)
          .send({ ...creds(a), app_user_id: u.app_user_id, secret });
      badRequest(await put(12345678), /^secret must be a string$/);
      badRequest(await put(['12345678', '12345678']), /^secret must be a string$/);
      badRequest(await put('short'), /^secret must be 8 to 200 characters$/);
      badRequest(await put('s'.repeat(201)), /^secret must be 8 to 200 characters$/);
      await put('s'.repeat(200)).expect(200);
      const made = await put(undefined).expect(200);
      expect(made.body.sign_in_secret).toEqual(expect.any(String));
      badRequest(
        await request(t.server)
          .put(`${USERS}/sign-in-secret`)
          .send({ ...creds(a), secret: 'long enough' }),
        /^app_user_id is required$/,
      );
    });

    it('CLI user set-sign-in-secret: a random secret shown once; an app_user_id breaking the rule is refused', async () => {
      const u = await createUser(t, a, 'cli-secret');
      const run = await runCliInProcess(t, ['user', 'set-sign-in-secret', a.client_id, u.app_user_id]);
      expect(JSON.parse(run.stdout)).toEqual({
        service_user_id: u.service_user_id,
        app_user_id: 'cli-secret',
        sign_in_secret: expect.any(String),
      });
      await expect(
        runCliInProcess(t, ['user', 'set-sign-in-secret', a.client_id, 'x'.repeat(257)]),
      ).rejects.toThrow(/^app_user_id is longer than 256 characters$/);
    });

    it('POST auth-code: a scope that is not a string → 400', async () => {
      const u = await createUser(t, a, 'code-rules');
      badRequest(
        await request(t.server)
          .post(`${USERS}/auth-code`)
          .send({ ...creds(a), app_user_id: u.app_user_id, scope: ['openid', 'x'] }),
        /^scope must be a string$/,
      );
      badRequest(
        await request(t.server)
          .post(`${USERS}/auth-code`)
          .send({ ...creds(a), app_user_id: '' }),
        /^app_user_id is required$/,
      );
    });

    it('GET: a bad service_user_id or app_user_id filter → 400; an empty service_user_id is no filter', async () => {
      const list = (query: Record<string, unknown>) =>
        request(t.server).get(USERS).set(creds(a)).query(query);
      badRequest(await list({ service_user_id: 'abc' }), /^service_user_id must be a positive integer$/);
      badRequest(await list({ service_user_id: '0' }), /^service_user_id must be a positive integer$/);
      badRequest(await list({ app_user_id: '' }), /^app_user_id is required$/);
      badRequest(await list({ app_user_id: ['a', 'b'] }), /^app_user_id is required$/);
      const all = await list({ service_user_id: '' }).expect(200);
      expect(all.body.total).toBeGreaterThan(1);
    });
  });
});
