import { elementTables } from './element-tables';
import { structureDefinitions } from './structure-definitions';

describe('structureDefinitions', () => {
  it('loads only base definitions, once', () => {
    const r4 = structureDefinitions('r4');
    expect(structureDefinitions('r4')).toBe(r4);
    expect(r4.byType.get('Patient')?.kind).toBe('resource');
    expect(r4.byType.get('date')?.valueRegex).toContain('[0-9]');
    expect(r4.byType.has('vitalsigns')).toBe(false); // a profile
    expect(r4.typeAliases.get('SimpleQuantity')).toBe('Quantity');
  });
});

describe('ElementTables', () => {
  const tables = elementTables('r4');

  it('expands choice elements and records cardinality', () => {
    const observation = tables.table('Observation');
    expect(observation?.elements.get('valueQuantity')).toMatchObject({
      choiceOf: 'value[x]',
      typeCode: 'Quantity',
    });
    expect(observation?.elements.get('status')).toMatchObject({ min: 1, isArray: false, isPrimitive: true });
    expect(observation?.elements.get('identifier')).toMatchObject({ isArray: true });
    expect(observation?.required.map((r) => r.name)).toEqual(['status', 'code']);
  });

  it('resolves backbone elements, contentReference and Resource.id', () => {
    expect(tables.table('Patient')?.elements.get('contact')?.tableKey).toBe('Patient.contact');
    expect(tables.table('Questionnaire.item')?.elements.get('item')?.tableKey).toBe('Questionnaire.item');
    expect(tables.table('Patient')?.elements.get('id')?.typeCode).toBe('id');
    expect(tables.table('HumanName')?.elements.get('id')?.typeCode).toBe('string');
    expect(tables.table('date')?.elements.has('extension')).toBe(true);
  });
});
