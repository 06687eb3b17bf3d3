import { resourceRowStorageSql } from './resource-row-storage';

describe('resource row storage', () => {
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
