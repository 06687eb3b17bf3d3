import { createHash, randomBytes } from 'crypto';
import request from 'supertest';
import {
  createClient,
  createTestApp,
  createUser,
  IDENTITY_TEST_ENV,
  TestApp,
  TestClient,
} from '@app/testing';
import { GrantsRepository } from '../src/modules/auth/tokens/grants.repository';

const TOKEN = '/oauth2/token';
const AUTH_CODE = '/user-management/v1/user/auth-code';
/** Tries per race; each fires its requests at once (one event-loop turn, one barrier). */
const TRIES = 20;
const AT_ONCE = 4;

/**
 * Single-use credentials under concurrency (RFC 6749 §4.1.2, §10.4; RFC 9700
 * §4.14.2): the same code or refresh token sent by several requests at the same instant gives one
 * token set; every loser is a reuse that revokes everything issued from it, winners included.
 */
describe('security: single-use credentials under concurrency (e2e)', () => {
  let t: TestApp;
  let a: TestClient;
  beforeAll(async () => {
    t = await createTestApp(IDENTITY_TEST_ENV);
    a = await createClient(t);
  });
  afterAll(async () => t?.close());

  const creds = () => ({ client_id: a.client_id, client_secret: a.client_secret });
  const token = (form: Record<string, string>) =>
    request(t.server)
      .post(TOKEN)
      .type('form')
      .send({ ...form, ...creds() });
  const read = (accessToken: string) =>
    request(t.server).get('/r4/Patient').set('Authorization', `Bearer ${accessToken}`);

  /** Fires `n` requests in the same turn of the event loop: they reach the database together. */
  const atOnce = <T>(n: number, send: () => PromiseLike<T>): Promise<T[]> =>
    Promise.all(Array.from({ length: n }, () => send()));

  it(`the same code exchanged ${AT_ONCE}× at once: no live token set (${TRIES} tries)`, async () => {
    const user = await createUser(t, a);
    let winners = 0;
    for (let i = 0; i < TRIES; i++) {
      const code = (
        await request(t.server)
          .post(AUTH_CODE)
          .send({ app_user_id: user.app_user_id, ...creds() })
          .expect(200)
      ).body.code as string;
      const answers = await atOnce(AT_ONCE, () => token({ grant_type: 'authorization_code', code }));
      const ok = answers.filter((r) => r.status === 200);
      // One request wins the code; the others are reuses and revoke what it issued. The winner
      // may still be answering when that happens: then it answers invalid_grant too.
      expect(ok.length).toBeLessThanOrEqual(1);
      for (const r of answers.filter((x) => x.status !== 200)) {
        expect([r.status, r.body.error]).toEqual([400, 'invalid_grant']);
      }
      winners += ok.length;
      // What the winner got is dead, access and refresh token alike.
      for (const won of ok) {
        await read(won.body.access_token).expect(401);
        const refreshed = await token({ grant_type: 'refresh_token', refresh_token: won.body.refresh_token });
        expect([refreshed.status, refreshed.body.error]).toEqual([400, 'invalid_grant']);
      }
      // … and the code stays spent.
      const late = await token({ grant_type: 'authorization_code', code });
      expect([late.status, late.body.error]).toEqual([400, 'invalid_grant']);
    }
    process.stdout.write(
      `code race: ${winners} of ${TRIES} tries answered one token set (dead), the rest none\n`,
    );
  }, 120_000);

  it(`the same refresh token used ${AT_ONCE}× at once: no live chain: the family is revoked (${TRIES} tries)`, async () => {
    for (let i = 0; i < TRIES; i++) {
      const user = await createUser(t, a);
      const answers = await atOnce(AT_ONCE, () =>
        token({ grant_type: 'refresh_token', refresh_token: user.refresh_token }),
      );
      const ok = answers.filter((r) => r.status === 200);
      expect(ok.length).toBeLessThanOrEqual(1);
      for (const r of answers.filter((x) => x.status !== 200)) {
        expect([r.status, r.body.error]).toEqual([400, 'invalid_grant']);
      }
      // Every token of the family, the winner's rotation included, is revoked.
      await read(user.access_token).expect(401);
      for (const won of ok) {
        await read(won.body.access_token).expect(401);
        const next = await token({ grant_type: 'refresh_token', refresh_token: won.body.refresh_token });
        expect([next.status, next.body.error]).toEqual([400, 'invalid_grant']);
      }
    }
  }, 120_000);

  it('a sequential second use still revokes the first use (no race needed)', async () => {
    const user = await createUser(t, a);
    const first = await token({ grant_type: 'refresh_token', refresh_token: user.refresh_token }).expect(200);
    await read(first.body.access_token).expect(200);
    const second = await token({ grant_type: 'refresh_token', refresh_token: user.refresh_token });
    expect([second.status, second.body.error]).toEqual([400, 'invalid_grant']);
    await read(first.body.access_token).expect(401);
  });

  it('the conditional write itself: 32 consumptions of one code at once, one winner (20 tries)', async () => {
    const repo = t.app.get(GrantsRepository);
    const scope = { clientId: a.client_id };
    for (let i = 0; i < TRIES; i++) {
      const hash = createHash('sha256').update(randomBytes(16)).digest('base64url');
      await repo.insertCode(scope, {
        _id: hash,
        u: 1,
        app_user_id: 'u',
        scope: [],
        expiresAt: new Date(Date.now() + 60_000),
      });
      const won = await Promise.all(
        Array.from({ length: 32 }, (_, k) => repo.consumeCode(scope, hash, `family-${k}`)),
      );
      const winners = won.filter((r) => r !== null);
      expect(winners.length).toBe(1);
      // the stored family is the winner's: a later reuse revokes what the winner was issued
      const stored = await repo.findCode(scope, hash);
      expect(stored?.used).toBe(true);
      expect(won.indexOf(winners[0])).toBe(Number(stored?.family?.slice('family-'.length)));
    }
  });
});
