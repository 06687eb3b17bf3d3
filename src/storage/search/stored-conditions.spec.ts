import { buildFilter } from './filter-builder';
import { extractIndex } from '@app/fhir/search/index-extraction';
import { parseSearch } from '@app/fhir/search/search-parser';
import type { FhirVersion } from '@app/fhir';
import { NO_MATCH, storedReferenceEntries } from './stored-conditions';

type Doc = Record<string, unknown> & { t: string; idx: Record<string, unknown> };

/** Test-only evaluator of the condition shapes the builder emits (`t`, `id`, `del`, `idx.*`). */
function matches(condition: Record<string, unknown>, doc: Doc): boolean {
  return Object.entries(condition).every(([key, operand]) => {
    if (key === '$and')
      return (operand as Array<Record<string, unknown>>).every((part) => matches(part, doc));
    if (key === '$or') return (operand as Array<Record<string, unknown>>).some((part) => matches(part, doc));
    const raw = key.startsWith('idx.') ? doc.idx[key.slice(4)] : doc[key];
    const values = (Array.isArray(raw) ? raw : raw === undefined ? [] : [raw]) as string[];
    if (typeof operand === 'string') return values.includes(operand);
    const { $regex, $in, $nin, $ne } = operand as Record<string, unknown>;
    if ($ne !== undefined) return !values.includes($ne as string);
    if ($regex !== undefined) return values.some((value) => new RegExp($regex as string).test(value));
    if ($in !== undefined) return values.some((value) => ($in as string[]).includes(value));
    if ($nin !== undefined) return !values.some((value) => ($nin as string[]).includes(value));
    throw new Error(`evaluator does not handle ${key}: ${JSON.stringify(operand)}`);
  });
}

function stored(version: FhirVersion, resource: Record<string, unknown>): Doc {
  return {
    t: resource.resourceType as string,
    id: resource.id,
    idx: extractIndex(version, resource) as never,
  };
}

function finds(
  version: FhirVersion,
  type: string | undefined,
  query: Record<string, string>,
  doc: Doc,
): boolean {
  return matches(buildFilter(parseSearch(version, type, query)).filter, doc);
}

const observation = stored('r4', {
  resourceType: 'Observation',
  id: 'o1',
  status: 'final',
  code: { coding: [{ system: 'http://loinc.org', code: '85354-9' }] },
  component: [
    {
      code: { coding: [{ system: 'http://loinc.org', code: '8480-6' }] },
      valueQuantity: { value: 120, system: 'http://unitsofmeasure.org', code: 'mm[Hg]' },
    },
  ],
  subject: { reference: 'Patient/p1' },
});
const groupObservation = stored('r4', {
  resourceType: 'Observation',
  id: 'o2',
  status: 'final',
  code: { coding: [{ system: 'http://loinc.org', code: '1' }] },
  subject: { reference: 'Group/p1' },
});

describe('searches on derived parameters read the entries they are made of', () => {
  it('the derived parameter stores no entries of its own', () => {
    expect(observation.idx.ref).toEqual(['subject|Patient/p1', '*patient|Patient/p1']);
    expect(JSON.stringify(observation.idx.tok)).not.toContain('combo-code');
  });

  it('patient: the subject Patient references; another type never matches', () => {
    for (const value of ['p1', 'Patient/p1'])
      expect(finds('r4', 'Observation', { patient: value }, observation)).toBe(true);
    expect(finds('r4', 'Observation', { patient: 'p2' }, observation)).toBe(false);
    expect(finds('r4', 'Observation', { patient: 'p1' }, groupObservation)).toBe(false);
    expect(finds('r4', 'Observation', { subject: 'Group/p1' }, groupObservation)).toBe(true);
    // Group is among R4 patient's targets, but its expression selects Patient: nothing to find
    expect(buildFilter(parseSearch('r4', 'Observation', { patient: 'Group/p1' })).filter.$and).toEqual([
      NO_MATCH,
    ]);
    expect(finds('r4', 'Observation', { 'patient:missing': 'false' }, observation)).toBe(true);
    expect(finds('r4', 'Observation', { 'patient:missing': 'true' }, groupObservation)).toBe(true);
  });

  it('combo-code: the code and component codes, one $in; :not holds for neither', () => {
    const condition = buildFilter(parseSearch('r4', 'Observation', { 'combo-code': '8480-6' })).filter.$and;
    expect(condition).toEqual([{ 'idx.tok': { $in: ['code|8480-6', 'component-code|8480-6'] } }]);
    expect(finds('r4', 'Observation', { 'combo-code': 'http://loinc.org|8480-6' }, observation)).toBe(true);
    expect(finds('r4', 'Observation', { 'combo-code': '85354-9' }, observation)).toBe(true);
    expect(finds('r4', 'Observation', { 'combo-code': '1' }, observation)).toBe(false);
    expect(finds('r4', 'Observation', { 'combo-code:not': '8480-6' }, observation)).toBe(false);
    expect(finds('r4', 'Observation', { 'combo-code:not': '85354-9' }, observation)).toBe(false);
    expect(finds('r4', 'Observation', { 'combo-code:not': '2' }, observation)).toBe(true);
  });

  it('combo-value-quantity: ranges over the component values', () => {
    expect(finds('r4', 'Observation', { 'combo-value-quantity': 'gt100' }, observation)).toBe(true);
    expect(finds('r4', 'Observation', { 'combo-value-quantity': 'lt100' }, observation)).toBe(false);
    expect(
      finds(
        'r4',
        'Observation',
        { 'combo-value-quantity': '120|http://unitsofmeasure.org|mm[Hg]' },
        observation,
      ),
    ).toBe(true);
  });

  it('a search over several types binds each stored form to its types', () => {
    const allergy = stored('r4', {
      resourceType: 'AllergyIntolerance',
      id: 'a1',
      patient: { reference: 'Patient/p1' },
    });
    const query = { _type: 'Observation,AllergyIntolerance', patient: 'p1' };
    expect(finds('r4', undefined, query, observation)).toBe(true);
    expect(finds('r4', undefined, query, allergy)).toBe(true);
    expect(finds('r4', undefined, query, groupObservation)).toBe(false);
    expect(finds('r4', undefined, { ...query, patient: 'p2' }, allergy)).toBe(false);
  });

  it('STU3: patient reads subject Patient and Group references', () => {
    const stu3 = stored('stu3', {
      resourceType: 'Observation',
      id: 's1',
      status: 'final',
      code: { text: 'x' },
      subject: { reference: 'Group/g1' },
    });
    expect(finds('stu3', 'Observation', { patient: 'Group/g1' }, stu3)).toBe(true);
    expect(finds('stu3', 'Observation', { patient: 'g1' }, stu3)).toBe(true);
    expect(finds('stu3', 'Observation', { patient: 'Device/g1' }, stu3)).toBe(false);
  });

  it('phonetic reads name; the reference entries of chains and _revinclude', () => {
    const patient = stored('r4', { resourceType: 'Patient', id: 'p1', name: [{ family: 'Lemke' }] });
    expect(finds('r4', 'Patient', { phonetic: 'lem' }, patient)).toBe(true);
    expect(finds('r4', 'Patient', { phonetic: 'abc' }, patient)).toBe(false);
    expect(storedReferenceEntries('r4', 'Observation', 'patient', ['Patient/p1', 'Group/g1'])).toEqual([
      'subject|Patient/p1',
    ]);
    expect(storedReferenceEntries('r4', 'Observation', 'subject', ['Group/g1'])).toEqual([
      'subject|Group/g1',
    ]);
    expect(storedReferenceEntries('r4', 'Observation', 'patient', ['http://x/Patient/1'])).toEqual([
      'subject|http://x/Patient/1',
    ]);
  });
});
