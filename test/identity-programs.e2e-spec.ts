import { execFile } from 'child_process';
import { mkdtempSync } from 'fs';
import { tmpdir } from 'os';
import { join } from 'path';
import { promisify } from 'util';
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
const realmUrl = (realm: string) => `/auth/realms/${realm}/protocol/openid-connect/token`;
const payloadOf = (jwt: string) => JSON.parse(Buffer.from(jwt.split('.')[1], 'base64url').toString());

describe('identity: program realms, user list and rename, rate limits, CLI (e2e)', () => {
  let t: TestApp;
  let epa: TestClient;
  let provider: TestClient;
  let none: TestClient;
  beforeAll(async () => {
    t = await createTestApp(IDENTITY_TEST_ENV);
    epa = await createClient(t, { programs: ['epa'] });
    provider = await createClient(t, { programs: ['provider-access'] });
    none = await createClient(t, { programs: [] });
  });
  afterAll(async () => t?.close());

  const form = (c: TestClient, extra: Record<string, string> = {}) => ({
    grant_type: 'client_credentials',
    client_id: c.client_id,
    client_secret: c.client_secret,
    ...extra,
  });

  describe('program token endpoints (docs/api.md §4)', () => {
    it.each(['epa-uat', 'epa-prod'])(
      '%s: client_credentials for an epa client → client-level token',
      async (realm) => {
        const res = await request(t.server).post(realmUrl(realm)).type('form').send(form(epa)).expect(200);
        expect(res.body).toEqual({
          access_token: expect.any(String),
          token_type: 'Bearer',
          expires_in: 7200,
          scope: 'user/*.*',
        });
        expect(payloadOf(res.body.access_token)).toMatchObject({
          sub: epa.client_id,
          client_id: epa.client_id,
          sub_type: 'client',
          realm,
          customer: epa.customer,
        });
      },
    );

    it('dev-portal: GET with a form body, scope bulk-data|user/*.rs → read-only token', async () => {
      const res = await request(t.server)
        .get(realmUrl('dev-portal'))
        .type('form')
        .send(form(provider, { scope: 'bulk-data|user/*.rs' }))
        .expect(200);
      expect(res.body.scope).toBe('bulk-data user/*.rs');
      expect(res.body.refresh_token).toBeUndefined();
    });

    it('dev-portal refuses write scopes; unknown scopes → invalid_scope', async () => {
      const write = await request(t.server)
        .post(realmUrl('dev-portal'))
        .type('form')
        .send(form(provider, { scope: 'user/*.*' }))
        .expect(400);
      expect(write.body.error).toBe('invalid_scope');
      const unknown = await request(t.server)
        .post(realmUrl('epa-uat'))
        .type('form')
        .send(form(epa, { scope: 'root' }))
        .expect(400);
      expect(unknown.body.error).toBe('invalid_scope');
    });

    it('a client without the program → unauthorized_client', async () => {
      const res = await request(t.server)
        .post(realmUrl('epa-prod'))
        .type('form')
        .send(form(provider))
        .expect(400);
      expect(res.body.error).toBe('unauthorized_client');
      const res2 = await request(t.server)
        .post(realmUrl('dev-portal'))
        .type('form')
        .send(form(none))
        .expect(400);
      expect(res2.body.error).toBe('unauthorized_client');
    });

    it('unknown realm → 404; bad secret → 401 invalid_client', async () => {
      await request(t.server).post(realmUrl('master')).type('form').send(form(epa)).expect(404);
      const bad = await request(t.server)
        .post(realmUrl('epa-uat'))
        .type('form')
        .send({ ...form(epa), client_secret: 'wrong' })
        .expect(401);
      expect(bad.body.error).toBe('invalid_client');
    });

    it('Patient Access: authorization_code at a realm works as at /oauth2/token', async () => {
      const user = await createUser(t, epa);
      const code = await request(t.server)
        .post(`${USERS}/auth-code`)
        .send({ app_user_id: user.app_user_id, client_id: epa.client_id, client_secret: epa.client_secret })
        .expect(200);
      const res = await request(t.server)
        .post(realmUrl('epa-uat'))
        .type('form')
        .send({
          grant_type: 'authorization_code',
          code: code.body.code,
          client_id: epa.client_id,
          client_secret: epa.client_secret,
        })
        .expect(200);
      expect(payloadOf(res.body.access_token).sub).toBe(String(user.service_user_id));
    });
  });

  describe('GET and PUT /user-management/v1/user', () => {
    let c: TestClient;
    beforeAll(async () => {
      c = await createClient(t);
      for (let i = 0; i < 5; i++) await createUser(t, c, `list-${i}`);
    });

    it('lists with paging and filters', async () => {
      const page = await request(t.server)
        .get(USERS)
        .query({ limit: 2, offset: 1 })
        .set(clientHeaders(c, 'client'))
        .expect(200);
      expect(page.body).toMatchObject({ total: 5, limit: 2, offset: 1 });
      expect(page.body.users.map((u: { app_user_id: string }) => u.app_user_id)).toEqual([
        'list-1',
        'list-2',
      ]);
      expect(page.body.users[0]).toEqual({
        service_user_id: expect.any(Number),
        app_user_id: 'list-1',
        active: true,
        created: expect.any(String),
      });
      const byName = await request(t.server)
        .get(USERS)
        .query({ app_user_id: 'list-3' })
        .set(clientHeaders(c, 'client'));
      expect(byName.body.users).toHaveLength(1);
      const byId = await request(t.server)
        .get(USERS)
        .query({ service_user_id: byName.body.users[0].service_user_id })
        .set({ client_id: c.client_id, client_secret: c.client_secret });
      expect(byId.body.users[0].app_user_id).toBe('list-3');
      const bad = await request(t.server)
        .get(USERS)
        .query({ limit: 'many' })
        .set(clientHeaders(c, 'client'))
        .expect(400);
      expect(bad.body.error).toBe('bad_request');
    });

    it('renames (also via app_id_user); service_user_id cannot change', async () => {
      const u = await createUser(t, c, 'old-name');
      const headers = { client_id: c.client_id, client_secret: c.client_secret };
      const res = await request(t.server)
        .put(USERS)
        .set(headers)
        .send({ app_user_id: 'new-name', service_user_id: String(u.service_user_id) })
        .expect(200);
      expect(res.body).toMatchObject({ service_user_id: u.service_user_id, app_user_id: 'new-name' });
      await request(t.server)
        .put(USERS)
        .set(headers)
        .type('form')
        .send({ app_id_user: 'newer-name', service_user_id: String(u.service_user_id) })
        .expect(200);
      const list = await request(t.server).get(USERS).set(bearer(u.access_token)).expect(200);
      expect(list.body.users).toEqual([
        expect.objectContaining({ service_user_id: u.service_user_id, app_user_id: 'newer-name' }),
      ]);
    });

    it('PUT: unknown user 404, another client`s user 404, a taken name 409, bad credentials 401', async () => {
      const headers = { client_id: c.client_id, client_secret: c.client_secret };
      await request(t.server)
        .put(USERS)
        .set(headers)
        .send({ app_user_id: 'x', service_user_id: '999999999' })
        .expect(404);
      const foreign = await createUser(t, epa);
      await request(t.server)
        .put(USERS)
        .set(headers)
        .send({ app_user_id: 'stolen', service_user_id: foreign.service_user_id })
        .expect(404);
      const u = await createUser(t, c);
      const taken = await request(t.server)
        .put(USERS)
        .set(headers)
        .send({ app_user_id: 'list-0', service_user_id: u.service_user_id })
        .expect(409);
      expect(taken.body.error).toBe('conflict');
      await request(t.server)
        .put(USERS)
        .set({ client_id: c.client_id, client_secret: 'nope' })
        .send({ app_user_id: 'y', service_user_id: u.service_user_id })
        .expect(401);
      await request(t.server)
        .put(USERS)
        .set(headers)
        .send({ app_user_id: 'y', service_user_id: 'abc' })
        .expect(400);
    });
  });

  describe('rate limits', () => {
    let limited: TestApp;
    beforeAll(async () => {
      limited = await createTestApp({ USER_MGMT_RATE_LIMIT: '3', TOKEN_FAILURE_LIMIT: '2' });
    });
    afterAll(async () => limited?.close());

    it('user-management: over the hourly limit → 429 with Retry-After, per client', async () => {
      const c = await createClient(limited);
      const other = await createClient(limited);
      for (let i = 0; i < 3; i++) await createUser(limited, c, `rl-${i}`);
      const res = await request(limited.server)
        .post(USERS)
        .send({ app_user_id: 'rl-3', client_id: c.client_id, client_secret: c.client_secret })
        .expect(429);
      expect(res.body.error).toBe('too_many_requests');
      expect(Number(res.headers['retry-after'])).toBeGreaterThan(0);
      expect(Number(res.headers['retry-after'])).toBeLessThanOrEqual(3600);
      await request(limited.server).get(USERS).set(clientHeaders(c, 'client')).expect(429);
      await createUser(limited, other);
    });

    it('token endpoint: failed client authentications are limited per source; a never-verified secret from it too', async () => {
      const c = await createClient(limited, { programs: ['epa'] });
      const attempt = (secret: string) =>
        request(limited.server)
          .post(realmUrl('epa-uat'))
          .type('form')
          .send({ grant_type: 'client_credentials', client_id: c.client_id, client_secret: secret });
      expect((await attempt('guess-1')).status).toBe(401);
      expect((await attempt('guess-2')).status).toBe(401);
      const blocked = await attempt('guess-3');
      expect(blocked.status).toBe(429);
      expect(blocked.headers['retry-after']).toBeDefined();
      // This source cannot be told from the owner: no verification for it (docs/security.md).
      expect((await attempt(c.client_secret)).status).toBe(429);
    });
  });

  describe('CLI (client create | list | rotate-secret | disable)', () => {
    const run = async (args: string[], dataDir: string) => {
      const { stdout } = await promisify(execFile)(
        process.execPath,
        ['-r', 'ts-node/register/transpile-only', '-r', 'tsconfig-paths/register', 'src/cli/cli.ts', ...args],
        {
          cwd: join(__dirname, '..'),
          env: {
            ...process.env,
            MONGO_URL: process.env.TEST_MONGO_URL,
            MONGO_DB: t.dbName,
            DATA_DIR: dataDir,
          },
          timeout: 60_000,
        },
      );
      return stdout.trim();
    };

    it('prints exactly one JSON object per command; the secret works over HTTP until rotated/disabled', async () => {
      const dir = mkdtempSync(join(tmpdir(), 'cli-'));
      const created = JSON.parse(
        await run(['client', 'create', '--name', 'CLI App', '--programs', 'epa,p2p'], dir),
      );
      expect(Object.keys(created).sort()).toEqual([
        'client_id',
        'client_secret',
        'customer',
        'name',
        'programs',
      ]);
      expect(created).toMatchObject({ name: 'CLI App', customer: 'cli-app', programs: ['epa', 'p2p'] });
      await createUser(t, created);
      const listed = JSON.parse(await run(['client', 'list'], dir));
      const mine = listed.find((x: { client_id: string }) => x.client_id === created.client_id);
      expect(mine).toMatchObject({ name: 'CLI App', disabled: false });
      expect(JSON.stringify(listed)).not.toMatch(/secret/);
      const rotated = JSON.parse(await run(['client', 'rotate-secret', created.client_id], dir));
      expect(rotated.client_secret).not.toBe(created.client_secret);
      await createUser(t, { ...created, client_secret: rotated.client_secret });
      const disabled = JSON.parse(await run(['client', 'disable', created.client_id], dir));
      expect(disabled.disabled).toBe(true);
    }, 120_000);
  });
});
