import { withSettings } from './documentdb-upgrade';

describe('engine upgrade: postgresql.conf settings', () => {
  const settings = [
    "shared_preload_libraries = 'a, b, x'",
    "documentdb.alternate_index_handler_name = 'extended_rum'",
  ];

  it('replaces the settings it writes, keeps the rest, and is idempotent', () => {
    const conf =
      "#shared_preload_libraries = ''\nmax_connections = 300\nshared_preload_libraries = 'a, b'\njit = off\n";
    const once = withSettings(conf, settings);
    expect(once).toBe(
      "#shared_preload_libraries = ''\nmax_connections = 300\njit = off\n" + settings.join('\n') + '\n',
    );
    expect(withSettings(once, settings)).toBe(once);
  });
});
