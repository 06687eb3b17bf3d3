import { OperationOutcomeError } from '@app/fhir';
import { parseBefore, parsePurgeRequest } from './purge-request';

function invalid(fn: () => unknown): OperationOutcomeError {
  try {
    fn();
  } catch (err) {
    if (err instanceof OperationOutcomeError) return err;
    throw err;
  }
  throw new Error('expected an OperationOutcomeError');
}

describe('parsePurgeRequest', () => {
  it('takes the version in any case and defaults to everything, delete mode', () => {
    for (const segment of ['R4', 'r4', 'Stu3', 'DSTU2']) {
      const request = parsePurgeRequest(segment, {});
      expect(request.version).toBe(segment.toLowerCase());
      expect(request).toMatchObject({ types: null, before: null, mode: 'delete' });
    }
  });

  it('answers 404 for an unknown version', () => {
    const err = invalid(() => parsePurgeRequest('r5', {}));
    expect(err.status).toBe(404);
  });

  it('reads _type as a deduplicated comma list, repeated parameters joined', () => {
    expect(parsePurgeRequest('r4', { _type: 'Observation, Patient,Observation' }).types).toEqual([
      'Observation',
      'Patient',
    ]);
    expect(parsePurgeRequest('r4', { _type: ['Observation', 'Provenance'] }).types).toEqual([
      'Observation',
      'Provenance',
    ]);
  });

  it('names every unknown type, per version', () => {
    const err = invalid(() => parsePurgeRequest('r4', { _type: 'Patient,Nope,MedicationOrder' }));
    expect(err.status).toBe(400);
    expect(err.message).toContain('Nope, MedicationOrder');
    // MedicationOrder is a DSTU2 type
    expect(parsePurgeRequest('dstu2', { _type: 'MedicationOrder' }).types).toEqual(['MedicationOrder']);
    expect(invalid(() => parsePurgeRequest('r4', { _type: ' , ' })).status).toBe(400);
  });

  it('accepts the two _mode values and refuses others', () => {
    expect(parsePurgeRequest('r4', { _mode: 'dry-run' }).mode).toBe('dry-run');
    expect(parsePurgeRequest('r4', { _mode: 'delete' }).mode).toBe('delete');
    const err = invalid(() => parsePurgeRequest('r4', { _mode: 'soft' }));
    expect(err.status).toBe(400);
    expect(err.message).toContain('_mode');
  });

  it('refuses unknown and repeated parameters: a typo must not widen a purge', () => {
    expect(invalid(() => parsePurgeRequest('r4', { _typ: 'Patient' })).message).toContain('_typ');
    expect(invalid(() => parsePurgeRequest('r4', { _before: ['2020-01-01', '2021-01-01'] })).status).toBe(
      400,
    );
  });
});

describe('parseBefore', () => {
  it('reads a date as the start of that day in UTC', () => {
    expect(parseBefore('2024-02-29').toISOString()).toBe('2024-02-29T00:00:00.000Z');
  });

  it('reads instants with a zone, fractions and a leap second', () => {
    expect(parseBefore('2024-05-01T12:30:00+02:00').toISOString()).toBe('2024-05-01T10:30:00.000Z');
    expect(parseBefore('2024-05-01T12:30:00.123456Z').toISOString()).toBe('2024-05-01T12:30:00.123Z');
    expect(parseBefore('2016-12-31T23:59:60Z').toISOString()).toBe('2016-12-31T23:59:59.999Z');
  });

  it.each([
    '2023-02-29',
    '2024-13-01',
    '2024-1-1',
    '2024',
    '2024-05-01T12:30Z',
    '2024-05-01T12:30:00',
    '2024-05-01T24:00:00Z',
    'yesterday',
    '',
  ])('refuses %j', (raw) => {
    const err = invalid(() => parseBefore(raw));
    expect(err.status).toBe(400);
    expect(err.message).toContain('_before');
  });
});
