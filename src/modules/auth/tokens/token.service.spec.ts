import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseSettings } from '../../../config/settings';
import { Logger } from '@nestjs/common';
import { sign } from 'jsonwebtoken';
import { loadSigningKey } from './signing-key';
import { TokenService } from './token.service';

describe('TokenService.verifyAccessToken', () => {
  let dir: string;
  beforeAll(() => (dir = mkdtempSync(join(tmpdir(), 'token-service-'))));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  const service = (ttlSeconds: number) =>
    new TokenService(
      parseSettings({ DATA_DIR: dir, ACCESS_TOKEN_TTL: String(ttlSeconds), LOG_LEVEL: 'silent' }),
    );

  it('remembers a verified token, frozen, and still refuses it once it expires', async () => {
    // exp has whole seconds: a 1 s lifetime signed late in a second ends a few ms later
    const tokens = service(2);
    const token = tokens.signUserAccessToken('client-a', 7, ['user/*.*'], 'family-1');
    const first = tokens.verifyAccessToken(token);
    expect(first).toMatchObject({ clientId: 'client-a', userId: 7, family: 'family-1' });
    expect(tokens.verifyAccessToken(token)).toBe(first);
    expect(Object.isFrozen(first)).toBe(true);
    expect(Object.isFrozen(first!.scopes)).toBe(true);
    await new Promise((resolve) => setTimeout(resolve, 3100));
    expect(tokens.verifyAccessToken(token)).toBeNull();
  });

  it('never caches a token that fails verification', () => {
    const tokens = service(60);
    const token = tokens.signUserAccessToken('client-a', 7, ['user/*.*'], 'family-1');
    const tampered = `${token.slice(0, -4)}AAAA`;
    expect(tokens.verifyAccessToken(tampered)).toBeNull();
    expect(tokens.verifyAccessToken(tampered)).toBeNull();
    expect(tokens.verifyAccessToken(token)).not.toBeNull();
  });

  it('refuses validly signed tokens without exp, with a non-canonical sub, or a client sub ≠ client_id', () => {
    const settings = parseSettings({ DATA_DIR: dir, LOG_LEVEL: 'silent' });
    const tokens = new TokenService(settings);
    tokens.jwks(); // loads (or creates) the key in DATA_DIR
    const key = loadSigningKey(undefined, dir, new Logger('test'));
    const forge = (claims: Record<string, unknown>, withExp = true) =>
      sign(
        { token_use: 'access', client_id: 'client-a', scope: 'user/*.*', jti: 'j', ...claims },
        key.privateKey,
        {
          algorithm: 'RS256',
          keyid: key.kid,
          issuer: settings.jwt.issuer,
          audience: settings.jwt.audience,
          ...(withExp ? { expiresIn: 60 } : {}),
        },
      );
    expect(tokens.verifyAccessToken(forge({ sub: '7', sub_type: 'user' }))).toMatchObject({ userId: 7 });
    expect(tokens.verifyAccessToken(forge({ sub: '7', sub_type: 'user' }, false))).toBeNull();
    for (const sub of ['0x1', '07', '7.0', ' 7', '1e1', '0', '-7', '99999999999999999', 7]) {
      expect({ sub, verified: tokens.verifyAccessToken(forge({ sub, sub_type: 'user' })) }).toEqual({
        sub,
        verified: null,
      });
    }
    expect(tokens.verifyAccessToken(forge({ sub: 'client-a', sub_type: 'client' }))).toMatchObject({
      userId: null,
    });
    expect(tokens.verifyAccessToken(forge({ sub: 'client-b', sub_type: 'client' }))).toBeNull();
  });
});
