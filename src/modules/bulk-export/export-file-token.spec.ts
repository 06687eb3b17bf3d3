import { randomBytes } from 'crypto';
import { ExportFileClaims, signFileToken, verifyFileToken } from './export-file-token';

const key = randomBytes(32);
const claims: ExportFileClaims = {
  v: 'r4',
  c: 'client-a',
  u: 7,
  t: 'Observation',
  since: null,
  tt: 1_700_000_000_000,
  from: 'r4|client-a|Observation|a',
  to: 'r4|client-a|Observation|m',
  exp: 2_000_000_000,
};

describe('export file token', () => {
  it('round-trips its claims', () => {
    const token = signFileToken(key, claims);
    expect(verifyFileToken(key, token, 1_900_000_000)).toEqual({ ok: true, claims });
  });

  it('keeps group claims', () => {
    const token = signFileToken(key, { ...claims, g: { id: 'g1', vid: 3 } });
    const check = verifyFileToken(key, token, 0);
    expect(check.ok && check.claims.g).toEqual({ id: 'g1', vid: 3 });
  });

  it('rejects a payload altered to another user, even with a re-encoded payload', () => {
    const [, sig] = signFileToken(key, claims).split('.');
    const forged = Buffer.from(JSON.stringify({ f: 1, ...claims, u: 8 })).toString('base64url');
    expect(verifyFileToken(key, `${forged}.${sig}`, 0)).toEqual({ ok: false, reason: 'bad-signature' });
  });

  it('rejects a flipped signature character, a truncated signature and another key', () => {
    const token = signFileToken(key, claims);
    for (const last of ['A', 'B', 'C', 'D']) {
      if (token.at(-1) !== last) expect(verifyFileToken(key, token.slice(0, -1) + last, 0).ok).toBe(false);
    }
    expect(verifyFileToken(key, token.slice(0, -4), 0).ok).toBe(false);
    expect(verifyFileToken(randomBytes(32), token, 0)).toEqual({ ok: false, reason: 'bad-signature' });
  });

  it('rejects malformed tokens', () => {
    for (const bad of ['', 'abc', 'a.b.c', 'a b.c', '.']) {
      expect(verifyFileToken(key, bad, 0)).toEqual({ ok: false, reason: 'malformed' });
    }
  });

  it('rejects a correctly signed payload of the wrong shape', () => {
    const token = signFileToken(key, { ...claims, u: 'seven' as unknown as number });
    expect(verifyFileToken(key, token, 0)).toEqual({ ok: false, reason: 'malformed' });
  });

  it('expires at exp', () => {
    const token = signFileToken(key, claims);
    expect(verifyFileToken(key, token, claims.exp)).toEqual({ ok: false, reason: 'expired' });
    expect(verifyFileToken(key, token, claims.exp - 1).ok).toBe(true);
  });
});
