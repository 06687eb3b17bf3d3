import { parseEngineSettings, parseSettings, SettingsError } from './settings';

describe('parseSettings', () => {
  it('gives defaults for an empty environment', () => {
    const s = parseSettings({});
    expect(s.port).toBe(8080);
    expect(s.host).toBe('127.0.0.1');
    expect(s.urls.base).toBe('http://127.0.0.1:8080');
    expect(s.urls.gateway).toBe(s.urls.base);
    expect(s.accessTokenTtlSeconds).toBe(7200);
    expect(s.bodyLimitBytes).toBe(5 * 1024 * 1024);
    // a count past 1,000 matches stops there (docs/api.md "Totals")
    expect(s.searchTotalExactUpTo).toBe(1000);
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

  it('reads the embedded database settings: EMBEDDED_RESOURCE_ROWS is plain unless it says compressed; a bad value is refused by name with the others', () => {
    for (const raw of [undefined, '', 'plain']) {
      const env = raw === undefined ? {} : { EMBEDDED_RESOURCE_ROWS: raw };
      expect(parseSettings(env).engine.resourceRows).toBe('plain');
    }
    expect(parseSettings({ EMBEDDED_RESOURCE_ROWS: 'compressed' }).engine.resourceRows).toBe('compressed');
    expect(parseSettings({}).engine).toEqual({
      resourceRows: 'plain',
      indexUpkeep: false,
      downloadDisabled: false,
    });
    expect(
      parseSettings({
        DOCUMENTDB_KIT: '0.108',
        DOCUMENTDB_PG_BIN_DIR: '/pg/bin',
        DOCUMENTDB_GATEWAY_BIN: '/gw',
        EMBEDDED_INDEX_UPKEEP: 'on',
        MONGOMS_SYSTEM_BINARY: '/bin/mongod',
        MONGOMS_DISABLE_DOWNLOAD: '1',
      }).engine,
    ).toEqual({
      kit: '0.108',
      pgBinDir: '/pg/bin',
      gatewayBin: '/gw',
      resourceRows: 'plain',
      indexUpkeep: true,
      mongodBinary: '/bin/mongod',
      downloadDisabled: true,
    });
    const bad = {
      EMBEDDED_RESOURCE_ROWS: 'lz4',
      DOCUMENTDB_KIT: 'old',
      EMBEDDED_INDEX_UPKEEP: 'yes',
      PORT: 'x',
    };
    for (const parse of [() => parseSettings(bad), () => parseEngineSettings(bad)]) {
      let error: unknown;
      try {
        parse();
      } catch (e) {
        error = e;
      }
      expect(error).toBeInstanceOf(SettingsError);
      expect((error as Error).message).toMatch(
        /EMBEDDED_RESOURCE_ROWS must be one of plain, compressed \(got "lz4"\)/,
      );
      expect((error as Error).message).toMatch(/DOCUMENTDB_KIT must be one of next, 0\.108 \(got "old"\)/);
      expect((error as Error).message).toMatch(/EMBEDDED_INDEX_UPKEEP must be one of on, off/);
    }
  });

  it('lets a caller set its own default log level, which LOG_LEVEL still overrides', () => {
    expect(parseSettings({}, { logLevel: 'warn' }).logLevel).toBe('warn');
    expect(parseSettings({ LOG_LEVEL: 'debug' }, { logLevel: 'warn' }).logLevel).toBe('debug');
    expect(parseSettings({}).logLevel).toBe('info');
  });
});
