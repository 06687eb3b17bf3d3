import { Logger } from '@nestjs/common';
import request from 'supertest';
import { createClient, createTestApp, createUser, TestApp, TestClient } from '@app/testing';
import { ClientsRepository } from '../src/modules/auth/clients/clients.repository';
import { ClientsService } from '../src/modules/auth/clients/clients.service';
import * as scryptSecret from '../src/modules/auth/clients/scrypt-secret';
import * as secretHash from '../src/modules/auth/clients/secret-hash';
import { MemberSessionService } from '../src/modules/auth/member-launch/member-session.service';
import { UsersService } from '../src/modules/users/users.service';
import { createPlan, createSmartApp } from './support/smart-launch';

const EPA = '/auth/realms/epa-uat/protocol/openid-connect/token';
const USERS = '/user-management/v1/user';

/** The real scrypt check, kept to run after a gate in the race below. */
const realScryptMatches = scryptSecret.scryptMatches;
/** scrypt verifications run by the app in this process, counted at the module's export. */
const scryptRuns = jest.spyOn(scryptSecret, 'scryptMatches');
/** Secret verifications of any format. */
const verifications = jest.spyOn(secretHash, 'verifySecret');
const upgradeLogs = jest.spyOn(Logger.prototype, 'log');
const upgradesOf = (clientId: string) =>
  upgradeLogs.mock.calls.filter(([message]) =>
    String(message).includes(`client ${clientId}: secret hash rewritten`),
  ).length;

/**
 * How client and member secrets are stored (docs/security.md "Throttling failed client
 * authentication", secret-hash.ts): secrets the server makes as a SHA-256 digest verified without
 * scrypt; client secrets stored as scrypt before keep verifying and are rewritten as a digest after
 * their first right use, never over a rotated secret; members' secrets stay scrypt.
 */
describe('security: secret storage (e2e)', () => {
  let t: TestApp;
  let repo: ClientsRepository;
  let clients: ClientsService;
  beforeAll(async () => {
    t = await createTestApp({ TRUST_PROXY: 'loopback', AUTH_FAILURE_WINDOW: '3600' });
    repo = t.app.get(ClientsRepository);
    clients = t.app.get(ClientsService);
  });
  afterAll(async () => t?.close());

  const token = (clientId: string, secret: string, address = '198.51.100.40') =>
    request(t.server)
      .post(EPA)
      .set('X-Forwarded-For', address)
      .type('form')
      .send({ grant_type: 'client_credentials', client_id: clientId, client_secret: secret });
  const storedHash = async (clientId: string) => (await repo.findWithHash(clientId))!.secretHash;
  /** A client whose secret is stored as scrypt, as every client secret was before the digest. */
  const legacyClient = async (): Promise<TestClient> => {
    const client = await createClient(t, { programs: ['epa'] });
    expect(
      await repo.setSecretHash(client.client_id, await secretHash.hashChosenSecret(client.client_secret)),
    ).toBe(true);
    return client;
  };
  /** Any change to a client drops this process's remembered verifications of it: the next one is real. */
  const forgetVerifications = (clientId: string) => clients.setBranding(clientId, { name: 'plan' });

  it('create, SMART app registration and rotate-secret store a digest; it authenticates without scrypt', async () => {
    const scryptBefore = scryptRuns.mock.calls.length;
    const client = await createClient(t, { programs: ['epa'] });
    expect(await storedHash(client.client_id)).toBe(secretHash.hashGeneratedSecret(client.client_secret));
    await token(client.client_id, client.client_secret).expect(200);

    const plan = await createPlan(t);
    const app = await createSmartApp(t, plan, { confidential: true });
    expect(await storedHash(app.client_id)).toBe(secretHash.hashGeneratedSecret(app.client_secret!));

    const rotated = await clients.rotateSecret(client.client_id);
    expect(await storedHash(client.client_id)).toBe(secretHash.hashGeneratedSecret(rotated.client_secret));
    await token(client.client_id, client.client_secret).expect(401);
    await token(client.client_id, rotated.client_secret).expect(200);
    expect(scryptRuns.mock.calls.length).toBe(scryptBefore);
  });

  it('a legacy scrypt hash authenticates, is rewritten once as the digest, and still authenticates after', async () => {
    const client = await legacyClient();
    const legacy = await storedHash(client.client_id);
    expect(legacy).toMatch(/^scrypt\$/);
    const scryptBefore = scryptRuns.mock.calls.length;
    // three at once: each may verify the scrypt hash, only one rewrites it (a conditional update)
    const answers = await Promise.all([1, 2, 3].map(() => token(client.client_id, client.client_secret)));
    expect(answers.map((a) => a.status)).toEqual([200, 200, 200]);
    expect(scryptRuns.mock.calls.length - scryptBefore).toBeGreaterThanOrEqual(1);
    expect(await storedHash(client.client_id)).toBe(secretHash.hashGeneratedSecret(client.client_secret));
    expect(upgradesOf(client.client_id)).toBe(1);

    // a real verification again (nothing remembered): the digest, no scrypt
    await forgetVerifications(client.client_id);
    const scryptAfter = scryptRuns.mock.calls.length;
    const verifiedAfter = verifications.mock.calls.length;
    await token(client.client_id, client.client_secret).expect(200);
    await token(client.client_id, 'wrong').expect(401);
    expect(verifications.mock.calls.length - verifiedAfter).toBe(2);
    expect(scryptRuns.mock.calls.length).toBe(scryptAfter);
    expect(upgradesOf(client.client_id)).toBe(1);
  });

  it('a wrong secret never rewrites a legacy hash', async () => {
    const client = await legacyClient();
    const legacy = await storedHash(client.client_id);
    const scryptBefore = scryptRuns.mock.calls.length;
    await token(client.client_id, 'wrong').expect(401);
    await token(client.client_id, `${client.client_secret}x`).expect(401);
    expect(scryptRuns.mock.calls.length - scryptBefore).toBe(2);
    expect(await storedHash(client.client_id)).toBe(legacy);
    expect(upgradesOf(client.client_id)).toBe(0);
  });

  it('a rotate while the legacy secret is being verified wins: only the new secret is valid after', async () => {
    const client = await legacyClient();
    // the old secret's scrypt check waits until the rotation is written (the real check, then)
    let rotationWritten!: () => void;
    const gate = new Promise<void>((resolve) => (rotationWritten = resolve));
    scryptRuns.mockImplementationOnce(async (secret, stored) => {
      await gate;
      return realScryptMatches(secret, stored);
    });
    const scryptBefore = scryptRuns.mock.calls.length;
    const inFlight = token(client.client_id, client.client_secret).then((r) => r);
    while (scryptRuns.mock.calls.length === scryptBefore)
      await new Promise((resolve) => setImmediate(resolve));
    const rotated = await clients.rotateSecret(client.client_id);
    rotationWritten();
    // verified against the hash it read before the rotation: answered as if it came just before it
    expect((await inFlight).status).toBe(200);

    expect(await storedHash(client.client_id)).toBe(secretHash.hashGeneratedSecret(rotated.client_secret));
    expect(upgradesOf(client.client_id)).toBe(0);
    // nothing remembered the old secret past the rotation, nor resurrected it in the database
    await token(client.client_id, client.client_secret).expect(401);
    await token(client.client_id, rotated.client_secret).expect(200);
  });

  it('a rotate after the rewrite: the old secret stops, the new one works', async () => {
    const client = await legacyClient();
    await token(client.client_id, client.client_secret).expect(200);
    expect(upgradesOf(client.client_id)).toBe(1);
    const rotated = await clients.rotateSecret(client.client_id);
    await token(client.client_id, client.client_secret).expect(401);
    await token(client.client_id, rotated.client_secret).expect(200);
    expect(await storedHash(client.client_id)).toBe(secretHash.hashGeneratedSecret(rotated.client_secret));
  });

  it('wrong secrets of a new client and of an unknown one cost the same: one digest, no scrypt', async () => {
    const client = await createClient(t, { programs: ['epa'] });
    const scryptBefore = scryptRuns.mock.calls.length;
    const verifiedBefore = verifications.mock.calls.length;
    await token(client.client_id, 'wrong').expect(401);
    await token('no-such-client', 'wrong').expect(401);
    expect(verifications.mock.calls.slice(verifiedBefore).map(([, stored]) => stored)).toEqual([
      secretHash.hashGeneratedSecret(client.client_secret),
      undefined,
    ]);
    expect(scryptRuns.mock.calls.length).toBe(scryptBefore);
  });

  describe('member sign-in secrets stay scrypt, and are never rewritten', () => {
    const address = '198.51.100.41';
    it('a chosen secret, a random one, and an unknown member each cost one scrypt run', async () => {
      const plan = await createPlan(t);
      const chosen = await createUser(t, plan);
      const random = await createUser(t, plan);
      const setSecret = (appUserId: string, secret?: string) =>
        request(t.server)
          .put(`${USERS}/sign-in-secret`)
          .send({
            client_id: plan.client_id,
            client_secret: plan.client_secret,
            app_user_id: appUserId,
            secret,
          })
          .expect(200);
      await setSecret(chosen.app_user_id, 'correct horse battery');
      const made = (await setSecret(random.app_user_id)).body.sign_in_secret as string;
      const users = t.app.get(UsersService);
      const sessions = t.app.get(MemberSessionService);
      const hashOf = async (appUserId: string) =>
        (await users.findSignIn(plan.client_id, appUserId))!.signInHash;
      const chosenHash = await hashOf(chosen.app_user_id);
      expect(chosenHash).toMatch(/^scrypt\$/);
      expect(await hashOf(random.app_user_id)).toMatch(/^scrypt\$/);

      const cost = async (username: string, password: string) => {
        const before = scryptRuns.mock.calls.length;
        const result = await sessions.checkSecret(plan.client_id, username, password, address);
        return { result, scrypt: scryptRuns.mock.calls.length - before };
      };
      expect(await cost(chosen.app_user_id, 'correct horse battery')).toEqual({
        result: { userId: chosen.service_user_id },
        scrypt: 1,
      });
      expect(await cost(random.app_user_id, made)).toEqual({
        result: { userId: random.service_user_id },
        scrypt: 1,
      });
      expect(await cost(chosen.app_user_id, 'wrong horse')).toEqual({ result: { wrong: true }, scrypt: 1 });
      expect(await cost('no-such-member', 'x')).toEqual({ result: { wrong: true }, scrypt: 1 });
      expect(await hashOf(chosen.app_user_id)).toBe(chosenHash);
    });
  });
});
