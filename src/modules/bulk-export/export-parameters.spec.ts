import { OperationOutcomeError } from '@app/fhir';
import { parseExportParameters, parseSince, parseTypes } from './export-parameters';

function error(fn: () => unknown): OperationOutcomeError {
  try {
    fn();
  } catch (err) {
    if (err instanceof OperationOutcomeError) return err;
    throw err;
  }
  throw new Error('expected an OperationOutcomeError');
}

describe('export parameters', () => {
  it('parses _since as a date (UTC day start) or an instant with offset', () => {
    expect(parseSince('2020-02-29').toISOString()).toBe('2020-02-29T00:00:00.000Z');
    expect(parseSince('2020-01-02T03:04:05Z').toISOString()).toBe('2020-01-02T03:04:05.000Z');
    expect(parseSince('2020-01-02T03:04:05.123+02:00').toISOString()).toBe('2020-01-02T01:04:05.123Z');
  });

  it.each([
    '2021-02-29',
    '2020-13-01',
    '2020-1-1',
    'yesterday',
    '2020-01-02T25:00:00Z',
    '2020-01-02T03:04:05',
    '',
  ])('rejects _since %p with 400', (raw) => {
    const err = error(() => parseSince(raw));
    expect(err.status).toBe(400);
    expect(err.message).toContain('_since');
  });

  it('parses _type, trims, deduplicates', () => {
    expect(parseTypes('r4', 'Patient, Observation,Patient')).toEqual(['Patient', 'Observation']);
  });

  it('names every unknown _type', () => {
    const err = error(() => parseTypes('r4', 'Patient,Foo,MedicationOrder'));
    expect(err.status).toBe(400);
    expect(err.message).toContain('Foo, MedicationOrder');
    expect(parseTypes('dstu2', 'MedicationOrder')).toEqual(['MedicationOrder']);
  });

  it('joins a repeated _type and rejects an empty one', () => {
    expect(parseExportParameters('r4', { _type: ['Patient', 'Condition'] }).types).toEqual([
      'Patient',
      'Condition',
    ]);
    expect(error(() => parseExportParameters('r4', { _type: '' })).status).toBe(400);
  });

  it('rejects an unsupported _outputFormat and unsupported parameters unless lenient', () => {
    expect(error(() => parseExportParameters('r4', { _outputFormat: 'text/csv' })).status).toBe(400);
    expect(parseExportParameters('r4', { _outputFormat: 'ndjson' })).toEqual({
      types: null,
      since: null,
      patients: null,
    });
    expect(error(() => parseExportParameters('r4', { _typeFilter: 'Observation?code=x' })).message).toContain(
      '_typeFilter',
    );
    expect(parseExportParameters('r4', { _typeFilter: 'x' }, true).types).toBeNull();
  });
});
