import { resourceKey } from '@app/fhir';
import {
  createClient,
  createTestApp,
  createUser,
  IDENTITY_TEST_ENV,
  TestApp,
  TestClient,
  TestUser,
} from '@app/testing';
import { GrantsRepository } from '../src/modules/auth/tokens/grants.repository';
import { ExportJobsRepository, type NewExportJob } from '../src/modules/bulk-export/export-jobs.repository';
import { UsersRepository } from '../src/modules/users/users.repository';
import { conditionKey, ConditionalKeysRepository } from '../src/storage/conditional-keys.repository';
import { ResourceIdsRepository } from '../src/storage/resource-ids.repository';
import type { TenantContext } from '../src/tenancy/tenant-context';

/**
 * The tenant-owned records beside the resources (conditional keys, id claims, export jobs, users,
 * grants), on the real database through their repositories: another client (and, where the
 * records are one user's, another user of the same client) can neither see, claim, alter nor
 * remove them.
 */
describe('cross-tenant: records beside the resources (e2e)', () => {
  let t: TestApp;
  let a: TestClient;
  let b: TestClient;
  let a1: TestUser;
  let a2: TestUser;
  let b1: TestUser;
  const ctx = (client: TestClient, user: TestUser | null): TenantContext => ({
    clientId: client.client_id,
    userId: user ? user.service_user_id : null,
    scopes: ['user/*.*'],
    form: user ? 'client-headers' : 'client-token',
  });
  const later = () => new Date(Date.now() + 3_600_000);

  beforeAll(async () => {
    t = await createTestApp(IDENTITY_TEST_ENV);
    a = await createClient(t);
    b = await createClient(t);
    a1 = await createUser(t, a, 'app-a1');
    a2 = await createUser(t, a, 'app-a2');
    b1 = await createUser(t, b, 'app-b1');
  });
  afterAll(() => t?.close());

  it('conditional keys: another client finds, takes over and releases nothing of a key it did not claim', async () => {
    const keys = t.app.get(ConditionalKeysRepository);
    const key = conditionKey(ctx(a, a1), 'r4', 'Patient', [['identifier', 'urn:x|1']]);
    expect(await keys.claim(ctx(a, a1), key, 'rk-a')).toBe(true);
    const held = (await keys.find(ctx(a, a1), key))!;
    expect(held.rk).toBe('rk-a');

    expect(await keys.find(ctx(b, b1), key)).toBeNull();
    expect(await keys.find(ctx(b, null), key)).toBeNull();
    expect(await keys.claim(ctx(b, b1), key, 'rk-b')).toBe(false);
    expect(await keys.takeOver(ctx(b, b1), held, 'rk-b')).toBe(false);
    await keys.release(ctx(b, b1), key, 'rk-a');

    expect(await keys.find(ctx(a, a1), key)).toEqual(held);
  });

  it('id claims: another client sees no owner and cannot claim or release a claim; another user of the client cannot release it', async () => {
    const ids = t.app.get(ResourceIdsRepository);
    const key = resourceKey('r4', a.client_id, 'Patient', 'claimed-by-a1');
    expect([...(await ids.claim(ctx(a, a1), a1.service_user_id, [key]))]).toEqual([]);

    expect(await ids.owners(ctx(b, b1), [key])).toEqual(new Map());
    expect([...(await ids.claim(ctx(b, b1), b1.service_user_id, [key]))]).toEqual([key]);
    await ids.release(ctx(b, b1), b1.service_user_id, [key]);
    await ids.releaseRange(ctx(b, b1), b1.service_user_id, { from: key, to: `${key}~` }, []);
    // a user of the same client sees the owner (its writer answers 409) but releases only its own
    expect(await ids.owners(ctx(a, a2), [key])).toEqual(new Map([[key, a1.service_user_id]]));
    await ids.release(ctx(a, a2), a2.service_user_id, [key]);

    expect(await ids.owners(ctx(a, a1), [key])).toEqual(new Map([[key, a1.service_user_id]]));
  });

  it("export jobs: another client, or another user of the client, neither reads nor cancels a user's job", async () => {
    const jobs = t.app.get(ExportJobsRepository);
    const now = new Date();
    const job: NewExportJob = {
      _id: 'job-of-a1',
      v: 'r4',
      kind: 'patient',
      groupId: null,
      types: null,
      since: null,
      patients: null,
      exportUrl: 'http://localhost/r4/$export',
      request: 'http://localhost/r4/Patient/$export',
      transactionTime: now,
      startedAt: now,
      exp: later(),
    };
    await jobs.create(ctx(a, a1), job);

    expect(await jobs.find(ctx(b, b1), job._id)).toBeNull();
    expect(await jobs.find(ctx(b, null), job._id)).toBeNull();
    expect(await jobs.find(ctx(a, a2), job._id)).toBeNull();
    expect(await jobs.remove(ctx(b, null), job._id)).toBe(false);
    expect(await jobs.remove(ctx(a, a2), job._id)).toBe(false);

    // the client as a whole sees its users' jobs, as it sees their data
    expect((await jobs.find(ctx(a, null), job._id))?.u).toBe(a1.service_user_id);
    expect((await jobs.find(ctx(a, a1), job._id))?.state).toBe('in-progress');
  });

  it("users: another client neither finds, lists, renames nor sets the sign-in secret of a client's user", async () => {
    const users = t.app.get(UsersRepository);
    const scopeB = { clientId: b.client_id };
    expect(await users.findById(scopeB, a1.service_user_id)).toBeNull();
    expect(await users.findByAppUserId(scopeB, 'app-a1')).toBeNull();
    expect(await users.findSignIn(scopeB, 'app-a1')).toBeNull();
    expect(await users.rename(scopeB, a1.service_user_id, 'taken-by-b')).toBeNull();
    expect(await users.setSignInHash(scopeB, 'app-a1', 'hash-of-b')).toBeNull();
    const page = { limit: 10, offset: 0 };
    expect(await users.list(ctx(b, null), { ...page, serviceUserId: a1.service_user_id })).toEqual({
      users: [],
      total: 0,
    });
    expect(await users.list(ctx(b, null), { ...page, appUserId: 'app-a1' })).toEqual({ users: [], total: 0 });
    // a user-level context lists only its own user
    expect(await users.list(ctx(a, a2), { ...page, serviceUserId: a1.service_user_id })).toEqual({
      users: [],
      total: 0,
    });
    expect((await users.list(ctx(a, a2), page)).users.map((u) => u.app_user_id)).toEqual(['app-a2']);

    const own = await users.findSignIn({ clientId: a.client_id }, 'app-a1');
    expect(own?.user).toMatchObject({ service_user_id: a1.service_user_id, app_user_id: 'app-a1' });
    expect(own?.signInHash).toBeUndefined();
    expect((await users.list(ctx(b, null), page)).users.map((u) => u.app_user_id)).toEqual(['app-b1']);
  });

  it("grants: another client finds, consumes and revokes none of a client's codes and refresh tokens", async () => {
    const grants = t.app.get(GrantsRepository);
    const scopeA = { clientId: a.client_id };
    const scopeB = { clientId: b.client_id };
    const holder = { u: a1.service_user_id, app_user_id: 'app-a1', scope: ['user/*.*'], expiresAt: later() };
    await grants.insertCode(scopeA, { _id: 'code-hash', ...holder });
    await grants.insertRefreshToken(scopeA, { _id: 'refresh-hash', family: 'family-a', ...holder });

    expect(await grants.findCode(scopeB, 'code-hash')).toBeNull();
    expect(await grants.consumeCode(scopeB, 'code-hash', 'family-b')).toBeNull();
    expect(await grants.findRefreshToken(scopeB, 'refresh-hash')).toBeNull();
    expect(await grants.consumeRefreshToken(scopeB, 'refresh-hash')).toBeNull();
    // a family of the same name revoked by another client is that client's record, not this one's
    expect(await grants.revokeFamily(scopeB, 'family-a', later())).toBe(0);
    expect(await grants.isFamilyRevoked(scopeB, 'family-a')).toBe(true);
    expect(await grants.isFamilyRevoked(scopeA, 'family-a')).toBe(false);

    expect(await grants.consumeCode(scopeA, 'code-hash', 'family-a')).toMatchObject({
      c: a.client_id,
      used: false,
    });
    expect(await grants.consumeRefreshToken(scopeA, 'refresh-hash')).toMatchObject({
      c: a.client_id,
      used: false,
    });
    await grants.insertRefreshToken(scopeA, { _id: 'refresh-hash-2', family: 'family-a', ...holder });
    expect(await grants.revokeFamily(scopeA, 'family-a', later())).toBe(2);
    expect(await grants.isFamilyRevoked(scopeA, 'family-a')).toBe(true);
  });
});
