import { parseFhirDateRange, plusForSpace } from './fhir-date-range';

describe('plusForSpace', () => {
  it('reads a space before hh:mm after a time as the + of an offset', () => {
    expect(plusForSpace('2024-01-01T00:00:00 00:00')).toBe('2024-01-01T00:00:00+00:00');
    expect(plusForSpace('2024-01-01T10:30 02:00')).toBe('2024-01-01T10:30+02:00');
    expect(plusForSpace('2024-01-01T10:30:00.123 05:30')).toBe('2024-01-01T10:30:00.123+05:30');
  });

  it('leaves any other text as it is', () => {
    for (const text of ['2024-01-01 00:00', '2024-01-01T00:00:00Z', 'a 00:00', '2024-01-01T00:00:00 0000']) {
      expect(plusForSpace(text)).toBe(text);
    }
  });
});

describe('parseFhirDateRange', () => {
  it('parses an instant whose + arrived as a space like the one with the +', () => {
    expect(parseFhirDateRange('2024-01-01T01:00:00 01:00')).toEqual(
      parseFhirDateRange('2024-01-01T01:00:00+01:00'),
    );
    expect(parseFhirDateRange('2024-01-01T01:00:00 01:00')?.lo.toISOString()).toBe(
      '2024-01-01T00:00:00.000Z',
    );
  });

  it('still refuses a space elsewhere', () => {
    expect(parseFhirDateRange('2024-01-01 01:00')).toBeUndefined();
  });
});
