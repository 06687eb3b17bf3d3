import { parseSettings, SettingsError } from './settings';

describe('parseSettings', () => {
  it('gives defaults for an empty environment', () => {
    const s = parseSettings({});
    expect(s.port).toBe(8080);
    expect(s.host).toBe('127.0.0.1');
    expect(s.urls.base).toBe('http://127.0.0.1:8080');
    expect(s.urls.gateway).toBe(s.urls.base);
    expect(s.accessTokenTtlSeconds).toBe(7200);
    expect(s.bodyLimitBytes).toBe(5 * 1024 * 1024);
  });

  it('names every bad key in one error', () => {
    try {
      parseSettings({ PORT: 'abc', LOG_LEVEL: 'loud', BASE_URL: 'ftp://x', MONGO_URL: 'http://db' });
      fail('expected an error');
    } catch (e) {
      expect(e).toBeInstanceOf(SettingsError);
      const msg = (e as Error).message;
      for (const key of ['PORT', 'LOG_LEVEL', 'BASE_URL', 'MONGO_URL']) expect(msg).toContain(key);
    }
  });

  it('parses sizes and trims trailing slashes of URLs', () => {
    const s = parseSettings({ BODY_LIMIT: '1mb', BASE_URL: 'https://fhir.example.org/' });
    expect(s.bodyLimitBytes).toBe(1024 * 1024);
    expect(s.urls.base).toBe('https://fhir.example.org');
  });

  it("lets MONGO_URL's database win over MONGO_DB, which applies only when the URL names none", () => {
    const named = parseSettings({
      MONGO_URL: 'mongodb://u:p@db:27017/tenant_a?authSource=admin',
      MONGO_DB: 'x',
    });
    expect(named.mongoDb).toBe('tenant_a');
    expect(parseSettings({ MONGO_URL: 'mongodb://db:27017/?replicaSet=rs0', MONGO_DB: 'x' }).mongoDb).toBe(
      'x',
    );
    expect(parseSettings({ MONGO_URL: 'mongodb://db:27017' }).mongoDb).toBe('fhir');
    expect(parseSettings({ MONGO_URL: 'mongodb+srv://c.example.net/prod' }).mongoDb).toBe('prod');
  });
});
