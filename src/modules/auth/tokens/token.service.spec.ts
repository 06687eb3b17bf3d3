import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseSettings } from '../../../config/settings';
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
    const tokens = service(1);
    const token = tokens.signUserAccessToken('client-a', 7, ['user/*.*'], 'family-1');
    const first = tokens.verifyAccessToken(token);
    expect(first).toMatchObject({ clientId: 'client-a', userId: 7, family: 'family-1' });
    expect(tokens.verifyAccessToken(token)).toBe(first);
    expect(Object.isFrozen(first)).toBe(true);
    expect(Object.isFrozen(first!.scopes)).toBe(true);
    await new Promise((resolve) => setTimeout(resolve, 2100));
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
});
