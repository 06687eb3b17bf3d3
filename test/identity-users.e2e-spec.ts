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
  });
});
