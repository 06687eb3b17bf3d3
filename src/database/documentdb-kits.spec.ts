import { documentDbPaths, extensionDir } from './documentdb-kits';
import { parseEngineSettings } from '../config/settings';

describe('DocumentDB kits', () => {
  it('finds the extensions of a PostgreSQL tree from its bin folder', () => {
    expect(extensionDir({ pgBinDir: '/usr/lib/postgresql/15/bin' })).toBe(
      '/usr/share/postgresql/15/extension',
    );
    expect(extensionDir({ pgBinDir: '/opt/documentdb-next/pg/usr/lib/postgresql/15/bin' })).toBe(
      '/opt/documentdb-next/pg/usr/share/postgresql/15/extension',
    );
  });

  it('DOCUMENTDB_KIT picks a kit; the bin settings win over it; anything else is refused', () => {
    expect(documentDbPaths(parseEngineSettings({ DOCUMENTDB_KIT: '0.108' }))).toMatchObject({
      pgBinDir: '/usr/lib/postgresql/15/bin',
      gatewayBin: '/opt/documentdb/bin/documentdb_gateway',
    });
    expect(documentDbPaths(parseEngineSettings({ DOCUMENTDB_KIT: 'next' }))).toMatchObject({
      pgBinDir: '/opt/documentdb-next/pg/usr/lib/postgresql/15/bin',
      gatewayBin: '/opt/documentdb-next/bin/documentdb_gateway',
    });
    expect(
      documentDbPaths(
        parseEngineSettings({
          DOCUMENTDB_KIT: 'next',
          DOCUMENTDB_PG_BIN_DIR: '/x/bin',
          DOCUMENTDB_GATEWAY_BIN: '/x/gw',
        }),
      ),
    ).toMatchObject({ pgBinDir: '/x/bin', gatewayBin: '/x/gw' });
    expect(() => parseEngineSettings({ DOCUMENTDB_KIT: '0.112' })).toThrow(
      /DOCUMENTDB_KIT must be one of next, 0.108/,
    );
  });
});
