import { createSign, generateKeyPairSync } from 'crypto';
import { existsSync } from 'fs';
import { join } from 'path';
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
} from '@app/testing';
import { ClientsService } from '../src/modules/auth/clients/clients.service';

const USERS = '/user-management/v1/user';
/** The FHIR store is built in parallel; its part of the matrix runs once its module exists. */
const FHIR_STORE = existsSync(join(__dirname, '../src/modules/fhir-store/fhir-store.module.ts'));

interface Principal {
  name: string;
  client: 'A' | 'B';
  /** The users whose data this credential may read (all of its client when client-wide). */
  readable: string[];
  /** The user a write is stored under, or null when client-wide (writes refused). */
  writesAs: string | null;
  headers: Record<string, string>;
}

describe('tenancy: credential forms and the cross-tenant matrix (e2e)', () => {
  let t: TestApp;
  const clients: Record<'A' | 'B', TestClient> = {} as never;
  const users: Record<string, TestUser> = {};
  const principals: Principal[] = [];
  const patientOf: Record<string, string> = {};

  beforeAll(async () => {
    t = await createTestApp(IDENTITY_TEST_ENV);
    clients.A = await createClient(t, { programs: ['epa', 'provider-access'] });
    clients.B = await createClient(t, { programs: ['epa', 'provider-access'] });
    for (const name of ['A1', 'A2', 'B1', 'B2']) {
      users[name] = await createUser(t, clients[name[0] as 'A' | 'B'], `app-${name}`);
    }
    for (const c of ['A', 'B'] as const) {
      const own = [`${c}1`, `${c}2`];
      const token = await clientToken(t, clients[c]);
      for (const u of own) {
        const sid = users[u].service_user_id;
        principals.push(
          {
            name: `${u} user token`,
            client: c,
            readable: [u],
            writesAs: u,
            headers: bearer(users[u].access_token),
          },
          {
            name: `${u} x-service-user-id`,
            client: c,
            readable: [u],
            writesAs: u,
            headers: clientHeaders(clients[c], sid),
          },
          {
            name: `${u} x-app-user-id`,
            client: c,
            readable: [u],
            writesAs: u,
            headers: clientHeaders(clients[c], { app_user_id: `app-${u}` }),
          },
          {
            name: `${u} client token + x-service-user-id`,
            client: c,
            readable: [u],
            writesAs: u,
            headers: { ...bearer(token), 'x-service-user-id': String(sid) },
          },
        );
      }
      principals.push(
        {
          name: `${c} x-service-user-id: client`,
          client: c,
          readable: own,
          writesAs: null,
          headers: clientHeaders(clients[c], 'client'),
        },
        { name: `${c} client token`, client: c, readable: own, writesAs: null, headers: bearer(token) },
      );
    }
    if (FHIR_STORE) {
      for (const name of Object.keys(users)) {
        const res = await request(t.server)
          .post('/r4/Patient')
          .set(bearer(users[name].access_token))
          .send({ resourceType: 'Patient', name: [{ family: `Family${name}` }] });
        expect(res.status).toBeLessThan(300);
        patientOf[name] = res.body.id;
      }
    }
  });
  afterAll(async () => t?.close());

  describe('user-management GET: each credential sees its own client only', () => {
    it.each(['A', 'B'] as const)('client %s principals', async (c) => {
      for (const p of principals.filter((x) => x.client === c)) {
        const res = await request(t.server).get(USERS).set(p.headers);
        expect([p.name, res.status]).toEqual([p.name, 200]);
        const seen = res.body.users.map((u: { app_user_id: string }) => u.app_user_id).sort();
        // a user-level credential sees its own user; client-wide ones the whole client
        expect([p.name, seen]).toEqual([p.name, p.readable.map((u) => `app-${u}`).sort()]);
      }
    });

    it("a user header naming another client's user → 404 as if absent", async () => {
      const other = users.B1.service_user_id;
      const viaHeaders = await request(t.server).get(USERS).set(clientHeaders(clients.A, other)).expect(404);
      expect(viaHeaders.body.error).toBe('not_found');
      await request(t.server)
        .get(USERS)
        .set(clientHeaders(clients.A, { app_user_id: 'app-B1' }))
        .expect(404);
      const token = await clientToken(t, clients.A);
      await request(t.server)
        .get(USERS)
        .set({ ...bearer(token), 'x-service-user-id': String(other) })
        .expect(404);
    });

    it("filtering by another client's service_user_id finds nothing", async () => {
      const res = await request(t.server)
        .get(USERS)
        .query({ service_user_id: users.B1.service_user_id })
        .set(clientHeaders(clients.A, 'client'))
        .expect(200);
      expect(res.body.total).toBe(0);
    });

    it("client A's id with client B's secret → 401", async () => {
      await request(t.server)
        .get(USERS)
        .set({
          client_id: clients.A.client_id,
          client_secret: clients.B.client_secret,
          'x-service-user-id': 'client',
        })
        .expect(401);
    });
  });

  (FHIR_STORE ? describe : describe.skip)('FHIR /r4/Patient: read, search, write', () => {
    it('read by id: 200 for readable users, 404 for every other', async () => {
      for (const p of principals) {
        for (const owner of Object.keys(patientOf)) {
          const res = await request(t.server).get(`/r4/Patient/${patientOf[owner]}`).set(p.headers);
          const expected = p.readable.includes(owner) ? 200 : 404;
          expect([p.name, owner, res.status]).toEqual([p.name, owner, expected]);
        }
      }
    });

    it('search returns exactly the readable users` patients', async () => {
      for (const p of principals) {
        const res = await request(t.server).get('/r4/Patient').query({ _count: 100 }).set(p.headers);
        expect([p.name, res.status]).toEqual([p.name, 200]);
        const ids = (res.body.entry ?? []).map((e: { resource: { id: string } }) => e.resource.id).sort();
        expect([p.name, ids]).toEqual([p.name, p.readable.map((u) => patientOf[u]).sort()]);
      }
    });

    it('write: stored under the credential`s user; client-wide → 400; other client`s user → 404', async () => {
      for (const p of principals) {
        const res = await request(t.server)
          .post('/r4/Patient')
          .set(p.headers)
          .send({ resourceType: 'Patient', name: [{ family: 'Written' }] });
        if (p.writesAs === null) {
          expect([p.name, res.status]).toEqual([p.name, 400]);
          expect(res.body.resourceType).toBe('OperationOutcome');
          continue;
        }
        expect([p.name, res.status]).toEqual([p.name, 201]);
        const owner = p.writesAs;
        const otherClient = owner.startsWith('A') ? 'B1' : 'A1';
        await request(t.server)
          .get(`/r4/Patient/${res.body.id}`)
          .set(bearer(users[owner].access_token))
          .expect(200);
        await request(t.server)
          .get(`/r4/Patient/${res.body.id}`)
          .set(bearer(users[otherClient].access_token))
          .expect(404);
      }
      const cross = await request(t.server)
        .post('/r4/Patient')
        .set(clientHeaders(clients.A, users.B1.service_user_id))
        .send({ resourceType: 'Patient' })
        .expect(404);
      expect(cross.body.resourceType).toBe('OperationOutcome');
    });

    it('a read-only client token (user/*.rs) may read but not write → 403', async () => {
      const token = await clientToken(t, clients.A, { realm: 'dev-portal', scope: 'bulk-data|user/*.rs' });
      await request(t.server).get('/r4/Patient').set(bearer(token)).expect(200);
      const res = await request(t.server)
        .post('/r4/Patient')
        .set({ ...bearer(token), 'x-service-user-id': String(users.A1.service_user_id) })
        .send({ resourceType: 'Patient' })
        .expect(403);
      expect(res.body.resourceType).toBe('OperationOutcome');
    });

    it('FHIR routes answer credential errors as OperationOutcome with WWW-Authenticate', async () => {
      const none = await request(t.server).get('/r4/Patient').expect(401);
      expect(none.headers['www-authenticate']).toMatch(/^Bearer/);
      expect(none.body.resourceType).toBe('OperationOutcome');
      const badToken = await request(t.server).get('/r4/Patient').set(bearer('not.a.token')).expect(401);
      expect(badToken.headers['www-authenticate']).toMatch(/error="invalid_token"/);
    });
  });

  describe('credential errors on a non-FHIR route ({ error, message })', () => {
    it('no credentials → 401 with WWW-Authenticate: Bearer', async () => {
      const res = await request(t.server).get(USERS).expect(401);
      expect(res.headers['www-authenticate']).toMatch(/^Bearer/);
      expect(res.body).toEqual({ error: 'unauthorized', message: expect.any(String) });
    });

    it('tokens in the query string are never accepted', async () => {
      const res = await request(t.server)
        .get(USERS)
        .query({ access_token: users.A1.access_token })
        .expect(401);
      expect(res.body.message).toMatch(/query string/);
    });

    it('a tampered, an unsigned (alg none), a foreign-signed or an expired token → 401', async () => {
      const [h, p, s] = users.A1.access_token.split('.');
      const payload = JSON.parse(Buffer.from(p, 'base64url').toString());
      const forged = Buffer.from(
        JSON.stringify({ ...payload, sub: String(users.B1.service_user_id) }),
      ).toString('base64url');
      await request(t.server)
        .get(USERS)
        .set(bearer(`${h}.${forged}.${s}`))
        .expect(401);
      const none = Buffer.from(JSON.stringify({ alg: 'none', typ: 'JWT' })).toString('base64url');
      await request(t.server)
        .get(USERS)
        .set(bearer(`${none}.${p}.`))
        .expect(401);
      const foreignKey = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey;
      const foreignSig = createSign('RSA-SHA256').update(`${h}.${p}`).sign(foreignKey).toString('base64url');
      await request(t.server)
        .get(USERS)
        .set(bearer(`${h}.${p}.${foreignSig}`))
        .expect(401);
      const short = await createTestApp({ ...IDENTITY_TEST_ENV, ACCESS_TOKEN_TTL: '1' });
      try {
        const c = await createClient(short);
        const u = await createUser(short, c);
        await request(short.server).get(USERS).set(bearer(u.access_token)).expect(200);
        await new Promise((r) => setTimeout(r, 2100));
        await request(short.server).get(USERS).set(bearer(u.access_token)).expect(401);
      } finally {
        await short.close();
      }
    });

    it('a malformed x-service-user-id → 400; a client header without secret → 401', async () => {
      await request(t.server)
        .get(USERS)
        .set(clientHeaders(clients.A, 'abc' as never))
        .expect(400);
      await request(t.server)
        .get(USERS)
        .set({ client_id: clients.A.client_id, 'x-service-user-id': 'client' })
        .expect(401);
    });

    it('a disabled client: secret, user token and client token stop working at once', async () => {
      const c = await createClient(t, { programs: ['epa'] });
      const u = await createUser(t, c);
      const token = await clientToken(t, c);
      await request(t.server).get(USERS).set(clientHeaders(c, 'client')).expect(200);
      await t.app.get(ClientsService).disable(c.client_id);
      await request(t.server).get(USERS).set(clientHeaders(c, 'client')).expect(401);
      await request(t.server).get(USERS).set(bearer(u.access_token)).expect(401);
      await request(t.server).get(USERS).set(bearer(token)).expect(401);
    });

    it('rotate-secret: the old secret stops working at once, the new one works', async () => {
      const c = await createClient(t);
      await request(t.server).get(USERS).set(clientHeaders(c, 'client')).expect(200);
      const rotated = await t.app.get(ClientsService).rotateSecret(c.client_id);
      await request(t.server).get(USERS).set(clientHeaders(c, 'client')).expect(401);
      await request(t.server)
        .get(USERS)
        .set(clientHeaders({ ...c, client_secret: rotated.client_secret }, 'client'))
        .expect(200);
    });
  });
});
