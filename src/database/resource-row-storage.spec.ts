import { resourceRowStorageOf, resourceRowStorageSql } from './resource-row-storage';

describe('resource row storage setting', () => {
  it('is plain unless EMBEDDED_RESOURCE_ROWS says compressed; anything else is refused by name', () => {
    expect(resourceRowStorageOf(undefined)).toBe('plain');
    expect(resourceRowStorageOf('')).toBe('plain');
    expect(resourceRowStorageOf('plain')).toBe('plain');
    expect(resourceRowStorageOf('compressed')).toBe('compressed');
    expect(() => resourceRowStorageOf('lz4')).toThrow(
      /EMBEDDED_RESOURCE_ROWS must be plain or compressed, not 'lz4'/,
    );
  });

  it('plain installs the trigger for new resources tables; compressed drops it; both set the existing tables', () => {
    const plain = resourceRowStorageSql('plain');
    expect(plain).toMatch(/CREATE EVENT TRIGGER fhir_resource_row_storage ON ddl_command_end/);
    expect(plain).toMatch(/SET \(toast_tuple_target = 8160\)/);
    const compressed = resourceRowStorageSql('compressed');
    expect(compressed).not.toMatch(/CREATE EVENT TRIGGER/);
    expect(compressed).toMatch(/DROP EVENT TRIGGER IF EXISTS fhir_resource_row_storage/);
    expect(compressed).toMatch(/RESET \(toast_tuple_target\)/);
  });
});
