import { parseSearch } from './search-parser';
import { SearchError } from './search-error';
import { patientCompartmentParams, searchParamsFor } from './search-parameter-registry';

function errorOf(run: () => unknown): SearchError {
  try {
    run();
  } catch (error) {
    if (error instanceof SearchError) return error;
    throw error;
  }
  throw new Error('expected a SearchError');
}

describe('parseSearch', () => {
  it('parses typed values, OR (comma) and AND (repeat)', () => {
    const parsed = parseSearch('r4', 'Observation', [
      ['code', 'http://loinc.org|8302-2,|x,sys|'],
      ['date', 'ge2020-01'],
      ['date', 'lt2021'],
      ['value-quantity', 'gt5.4|http://unitsofmeasure.org|mg'],
      ['subject:Patient', '123'],
    ]);
    expect(parsed.clauses.map((clause) => clause.param)).toEqual([
      'code',
      'date',
      'date',
      'value-quantity',
      'subject',
    ]);
    expect(parsed.clauses[0].values).toEqual([
      { kind: 'token', system: 'http://loinc.org', code: '8302-2' },
      { kind: 'token', system: '', code: 'x' },
      { kind: 'token', system: 'sys', code: undefined },
    ]);
    expect(parsed.clauses[1].values[0]).toMatchObject({ kind: 'date', prefix: 'ge' });
    expect(parsed.clauses[3].values[0]).toMatchObject({
      prefix: 'gt',
      value: 5.4,
      system: 'http://unitsofmeasure.org',
      code: 'mg',
    });
    expect(parsed.clauses[4]).toMatchObject({
      modifier: 'type',
      values: [{ kind: 'reference', reference: 'Patient/123' }],
    });
  });

  it("a reference's targets: those its expressions select (a bare id is looked up as that type alone)", () => {
    const parsed = parseSearch('r4', 'Condition', [
      ['patient', '1'],
      ['subject', '2'],
    ]);
    // `Condition.subject.where(resolve() is Patient)`, declared for Patient and Group
    expect(parsed.clauses[0].targets).toEqual(['Patient']);
    expect(parsed.clauses[1].targets).toEqual(['Group', 'Patient']);
  });

  it('honours escapes: \\, and \\| are literal', () => {
    const parsed = parseSearch('r4', 'Patient', { name: 'a\\,b', identifier: 'sys|v\\|1' });
    expect(parsed.clauses[0].values).toEqual([{ kind: 'string', text: 'a,b' }]);
    expect(parsed.clauses[1].values).toEqual([{ kind: 'token', system: 'sys', code: 'v|1' }]);
  });

  it('result parameters: defaults, clamping, sort, include, summary, elements, total', () => {
    const defaults = parseSearch('r4', 'Patient', {});
    expect(defaults).toMatchObject({ count: 10, skip: 0, sort: [], unknown: [] });
    const parsed = parseSearch('r4', 'Observation', {
      _count: '500',
      _skip: '20',
      _sort: '-date,_id',
      _include: ['Observation:subject', 'Observation:Patient'],
      '_revinclude:iterate': 'Provenance:target',
      _summary: 'count',
      _elements: 'id,code',
      _total: 'accurate',
    });
    expect(parsed.count).toBe(100);
    expect(parsed.skip).toBe(20);
    expect(parsed.sort).toEqual([
      { param: 'date', descending: true },
      { param: '_id', descending: false },
    ]);
    expect(parsed.include[0]).toMatchObject({
      sourceType: 'Observation',
      params: ['subject'],
      iterate: false,
    });
    expect(parsed.include[1].params).toEqual(expect.arrayContaining(['subject', 'patient']));
    expect(parsed.revinclude[0]).toMatchObject({
      sourceType: 'Provenance',
      params: ['target'],
      iterate: true,
    });
    expect(parsed).toMatchObject({ summary: 'count', elements: ['id', 'code'], total: 'accurate' });
    expect(parseSearch('r4', 'Patient', { _include: '*' }).include[0].wildcard).toBe(true);
  });

  it('chains (one level) and _has', () => {
    const parsed = parseSearch('r4', 'Observation', {
      'subject:Patient.name': 'smith',
      'patient.birthdate': '2000',
    });
    expect(parsed.chains[0]).toMatchObject({ referenceParam: 'subject', targetTypes: ['Patient'] });
    expect(parsed.chains[1]).toMatchObject({ referenceParam: 'patient', targetTypes: ['Patient'] });
    const has = parseSearch('r4', 'Patient', { '_has:Observation:patient:code': '1234' });
    expect(has.has[0]).toMatchObject({ sourceType: 'Observation', referenceParam: 'patient' });
  });

  it('collects unknown parameters, or refuses them when strict', () => {
    expect(parseSearch('r4', 'Patient', { foo: '1', 'name[$gt]': 'x', _format: 'json' }).unknown).toEqual([
      'foo',
      'name[$gt]',
    ]);
    expect(errorOf(() => parseSearch('r4', 'Patient', { foo: '1' }, { strict: true })).code).toBe(
      'not-supported',
    );
  });

  it('full text off: _content and _text refused with the reason, or collected as unknown when lenient', () => {
    const off = { fullTextOff: 'full text is off here (SETTING=off)' };
    for (const name of ['_content', '_text', '_text:exact']) {
      const error = errorOf(() => parseSearch('r4', 'Condition', { [name]: 'sinus' }, off));
      expect(error.code).toBe('not-supported');
      expect(error.message).toContain('SETTING=off');
      expect(
        errorOf(() => parseSearch('r4', 'Condition', { [name]: 'x' }, { ...off, strict: true })).code,
      ).toBe('not-supported');
    }
    const lenient = parseSearch(
      'r4',
      'Condition',
      { _content: 'sinus', code: 'x' },
      { ...off, lenient: true },
    );
    expect(lenient.unknown).toEqual(['_content']);
    expect(lenient.content).toEqual([]);
    expect(lenient.clauses).toHaveLength(1);
    // full text on (no reason given): the words are searched as before
    expect(parseSearch('r4', 'Condition', { _content: 'viral sinus' }).content).toEqual([
      [['viral', 'sinus']],
    ]);
  });

  it('ignores empty values', () => {
    expect(parseSearch('r4', 'Patient', { name: '', gender: ',' }).clauses).toEqual([]);
  });

  it.each<[string, Record<string, unknown>, string]>([
    ['bad date', { birthdate: '2020-13-01' }, 'invalid'],
    ['bad date text', { birthdate: 'yesterday' }, 'invalid'],
    ['unknown prefix', { birthdate: 'xx2020' }, 'invalid'],
    ['unknown modifier', { 'name:fuzzy': 'x' }, 'invalid'],
    ['unsupported modifier', { 'gender:in': 'http://vs' }, 'not-supported'],
    ['malformed token', { identifier: 'a|b|c' }, 'invalid'],
    ['empty token', { identifier: '|' }, 'invalid'],
    ['negative count', { _count: '-1' }, 'invalid'],
    ['text count', { _count: 'abc' }, 'invalid'],
    ['negative skip', { _skip: '-5' }, 'invalid'],
    ['window', { _skip: '9995', _count: '10' }, 'too-costly'],
    ['unknown sort', { _sort: 'nope' }, 'invalid'],
    ['unsortable sort', { _sort: 'general-practitioner' }, 'invalid'],
    ['bad total', { _total: 'maybe' }, 'invalid'],
    ['bad summary', { _summary: 'x' }, 'invalid'],
    ['bad include', { _include: 'Patient:nope' }, 'invalid'],
    ['bad include type', { _include: 'Nope:subject' }, 'invalid'],
    ['bad number', { 'death-date': 'ge' }, 'invalid'],
    ['missing not boolean', { 'name:missing': 'yes' }, 'invalid'],
    ['bad reference', { 'general-practitioner': 'a b' }, 'invalid'],
    ['bad _id', { _id: '$where' }, 'invalid'],
    ['object value (qs injection)', { name: { $gt: '' } }, 'invalid'],
    ['deep chain', { 'general-practitioner.organization.name': 'x' }, 'not-supported'],
    ['chain on non-reference', { 'name.family': 'x' }, 'invalid'],
    ['_type on a type search', { _type: 'Patient' }, 'invalid'],
  ])('%s → SearchError(%s)', (_label, query, code) => {
    expect(errorOf(() => parseSearch('r4', 'Patient', query)).code).toBe(code);
  });

  it('values per parameter and per search are bounded (too-costly naming the limit); at the limits the search parses', () => {
    const values = (n: number, stem = 'ab') => Array.from({ length: n }, (_, i) => `${stem}${i}`).join(',');
    const over = errorOf(() => parseSearch('r4', 'Observation', { _content: values(101) }));
    expect(over).toMatchObject({
      code: 'too-costly',
      message: "'_content' lists 101 values; at most 100 per parameter",
    });
    expect(parseSearch('r4', 'Observation', { _content: values(100) }).content[0]).toHaveLength(100);
    // escaped commas are not separators
    expect(() => parseSearch('r4', 'Patient', { name: Array(150).fill('a\\,b').join('') })).not.toThrow();
    const many = Array.from({ length: 6 }, (_, i): [string, string] => ['code', values(90, `c${i}-`)]);
    expect(errorOf(() => parseSearch('r4', 'Observation', many))).toMatchObject({
      code: 'too-costly',
      message: 'the search lists 540 values over all its parameters; at most 500',
    });
    expect(() => parseSearch('r4', 'Observation', many.slice(0, 5))).not.toThrow();
  });

  it('quantity and number errors', () => {
    expect(errorOf(() => parseSearch('r4', 'Observation', { 'value-quantity': '5|a' })).code).toBe('invalid');
    expect(errorOf(() => parseSearch('r4', 'RiskAssessment', { probability: 'abc' })).code).toBe('invalid');
  });

  it('system search with _type', () => {
    const parsed = parseSearch('r4', undefined, {
      _type: 'Patient,Observation',
      _id: 'a1',
      _lastUpdated: 'gt2020',
    });
    expect(parsed.types).toEqual(['Patient', 'Observation']);
    expect(parsed.clauses.map((clause) => clause.param)).toEqual(['_id', '_lastUpdated']);
    expect(errorOf(() => parseSearch('r4', undefined, { _type: 'Nope' })).code).toBe('invalid');
  });
});

describe('definitions helpers', () => {
  it('lists CapabilityStatement parameters per version', () => {
    const names = searchParamsFor('r4', 'Patient').map((param) => param.name);
    expect(names).toEqual(expect.arrayContaining(['_id', '_lastUpdated', 'name', 'birthdate', 'identifier']));
    expect(searchParamsFor('stu3', 'Observation').find((param) => param.name === 'code')?.type).toBe('token');
    expect(searchParamsFor('dstu2', 'MedicationOrder').map((param) => param.name)).toEqual(
      expect.arrayContaining(['patient', 'status', 'code', 'medication', 'datewritten', 'prescriber']),
    );
  });

  it('gives the patient compartment parameters', () => {
    expect(patientCompartmentParams('r4', 'Observation')).toEqual(
      expect.arrayContaining(['subject', 'performer']),
    );
    expect(patientCompartmentParams('r4', 'Patient')).toEqual(['link']);
    expect(patientCompartmentParams('stu3', 'Condition')).toEqual(expect.arrayContaining(['patient']));
    expect(patientCompartmentParams('dstu2', 'Condition')).toContain('patient');
    expect(patientCompartmentParams('r4', 'Organization')).toEqual([]);
  });
});
