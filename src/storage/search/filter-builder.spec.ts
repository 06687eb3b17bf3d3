import { buildFilter, idsFromReferences, withChainResults } from './filter-builder';
import { extractIndex } from '@app/fhir/search/index-extraction';
import { parseSearch } from '@app/fhir/search/search-parser';
import { normalizeText } from '@app/fhir/search/text-normalization';

const NOW = new Date('2024-06-01T00:00:00Z');

function built(type: string | undefined, query: Record<string, string | string[]>) {
  return buildFilter(parseSearch('r4', type, query), { now: NOW });
}

function conditions(type: string, query: Record<string, string | string[]>): unknown[] {
  return built(type, query).filter.$and as unknown[];
}

/** The single regex of a one-condition filter on `field`. */
function regexOf(type: string, query: Record<string, string>, field: string): RegExp {
  const condition = conditions(type, query)[0] as Record<string, { $regex: string }>;
  return new RegExp(condition[field].$regex);
}

describe('buildFilter', () => {
  it('scopes to type, skips tombstones, never emits tenant fields', () => {
    const { filter, sort } = built('Patient', { name: 'jo' });
    expect(filter).toMatchObject({ t: 'Patient', del: { $ne: true } });
    expect(Object.keys(filter)).not.toEqual(expect.arrayContaining(['c']));
    expect(filter).not.toHaveProperty('u');
    expect(filter).not.toHaveProperty('v');
    expect(sort).toEqual({ lu: -1, id: 1 });
  });

  it('string: starts-with (normalized), :exact, :contains', () => {
    expect(conditions('Patient', { name: 'Jö' })).toEqual([{ 'idx.str': { $regex: '^name\\|jo' } }]);
    expect(conditions('Patient', { 'name:exact': 'Jö' })).toEqual([{ 'idx.str': 'name:exact|Jö' }]);
    expect(conditions('Patient', { 'name:contains': 'ö' })).toEqual([
      { 'idx.str': { $regex: '^name\\|.*o' } },
    ]);
    expect(conditions('Patient', { name: 'a,b' })).toEqual([
      { $or: [{ 'idx.str': { $regex: '^name\\|a' } }, { 'idx.str': { $regex: '^name\\|b' } }] },
    ]);
  });

  it('token: code, system|code, |code, system|, :not, :text, :missing', () => {
    expect(conditions('Patient', { gender: 'male,female' })).toEqual([
      { 'idx.tok': { $in: ['gender|male', 'gender|female'] } },
    ]);
    expect(conditions('Patient', { identifier: 's|1' })).toEqual([{ 'idx.tok': 'identifier|s|1' }]);
    expect(conditions('Patient', { identifier: '|1' })).toEqual([{ 'idx.tok': 'identifier||1' }]);
    expect(conditions('Patient', { identifier: 'http://a.b|' })).toEqual([
      { 'idx.tok': { $regex: '^identifier\\|http://a\\.b\\|' } },
    ]);
    expect(conditions('Patient', { 'gender:not': 'male' })).toEqual([
      { 'idx.tok': { $nin: ['gender|male'] } },
    ]);
    expect(conditions('Observation', { 'code:text': 'Body' })).toEqual([
      { 'idx.str': { $regex: '^code:text\\|(.* )?body' } },
    ]);
    expect(conditions('Patient', { 'gender:missing': 'true' })).toEqual([{ 'idx.has': { $ne: 'gender' } }]);
    expect(conditions('Patient', { 'gender:missing': 'false' })).toEqual([{ 'idx.has': 'gender' }]);
  });

  it('reference: Type/id, bare id over the targets, :Type, absolute URL, :identifier', () => {
    // R4 `patient` on Observation targets Patient and Group (SearchParameter.target) but its
    // expression selects Patient (`where(resolve() is Patient)`): the subject's Patient entries
    // (stored-conditions.ts), one equality.
    expect(conditions('Observation', { patient: 'Patient/1' })).toEqual([{ 'idx.ref': 'subject|Patient/1' }]);
    expect(conditions('Observation', { patient: '1' })).toEqual([{ 'idx.ref': 'subject|Patient/1' }]);
    expect(conditions('Observation', { subject: '1' })).toEqual([
      {
        'idx.ref': {
          $in: ['subject|Group/1', 'subject|Device/1', 'subject|Patient/1', 'subject|Location/1'],
        },
      },
    ]);
    expect(conditions('Observation', { 'subject:Patient': '1' })).toEqual([
      { 'idx.ref': 'subject|Patient/1' },
    ]);
    expect(conditions('Observation', { subject: 'http://x/fhir/Patient/1' })).toEqual([
      { 'idx.ref': 'subject|http://x/fhir/Patient/1' },
    ]);
    expect(conditions('Observation', { 'based-on:identifier': 'urn:o|1' })).toEqual([
      { 'idx.tok': 'based-on:identifier|urn:o|1' },
    ]);
    // A bare id on a parameter that may point anywhere (Provenance.target → Resource).
    const anyTarget = regexOf('Provenance', { target: 'x.1' }, 'idx.ref');
    expect(anyTarget.test('target|Patient/x.1')).toBe(true);
    expect(anyTarget.test('target|Patient/xa1')).toBe(false);
  });

  it('date prefixes against stored ranges (checked on real index entries)', () => {
    const index = extractIndex('r4', { resourceType: 'Patient', birthDate: '1980-05-17' });
    const matches = (value: string): boolean => {
      const conditionList = conditions('Patient', { birthdate: value }) as Array<Record<string, unknown>>;
      return evaluate(conditionList[0], index as Record<string, string[]>);
    };
    expect(matches('1980-05-17')).toBe(true);
    expect(matches('1980')).toBe(true);
    expect(matches('eq1980-05-18')).toBe(false);
    expect(matches('ne1980-05-17')).toBe(false);
    expect(matches('ne1981')).toBe(true);
    expect(matches('gt1980-05-16')).toBe(true);
    expect(matches('gt1980-05-17')).toBe(false);
    expect(matches('ge1980-05-17')).toBe(true);
    expect(matches('lt1980-05-18')).toBe(true);
    expect(matches('le1980-05-16')).toBe(false);
    expect(matches('sa1980-05-16')).toBe(true);
    expect(matches('sa1980')).toBe(false);
    expect(matches('eb1981')).toBe(true);
    expect(matches('eb1980-05-17')).toBe(false);
    expect(matches('ap1981')).toBe(true); // ±10% of 43 years
    expect(matches('ap2020')).toBe(false);
  });

  it('number and quantity prefixes with implicit precision', () => {
    const observation = extractIndex('r4', {
      resourceType: 'Observation',
      valueQuantity: { value: 100, system: 'http://unitsofmeasure.org', code: 'mg', unit: 'milligram' },
    });
    const matches = (value: string): boolean =>
      evaluate(
        (conditions('Observation', { 'value-quantity': value }) as Array<Record<string, unknown>>)[0],
        observation as Record<string, string[]>,
      );
    expect(matches('100')).toBe(true);
    expect(matches('100.0')).toBe(true); // [99.95, 100.05)
    expect(matches('100.4')).toBe(false); // [100.35, 100.45)
    expect(matches('99.5')).toBe(false);
    expect(matches('1e2')).toBe(true);
    expect(matches('gt99|http://unitsofmeasure.org|mg')).toBe(true);
    expect(matches('gt99||mg')).toBe(true);
    expect(matches('gt99||milligram')).toBe(true);
    expect(matches('gt99||g')).toBe(false);
    expect(matches('lt100')).toBe(false);
    expect(matches('le100')).toBe(true);
    expect(matches('ne100')).toBe(false);
    expect(matches('ap95')).toBe(true);
    expect(matches('ap80')).toBe(false);
    const risk = extractIndex('r4', {
      resourceType: 'RiskAssessment',
      prediction: [{ probabilityDecimal: 0.25 }],
    });
    const filter = buildFilter(parseSearch('r4', 'RiskAssessment', { probability: 'ge0.2' })).filter;
    expect(
      evaluate((filter.$and as Array<Record<string, unknown>>)[0], risk as Record<string, string[]>),
    ).toBe(true);
  });

  it('uri: exact, :below, :above', () => {
    expect(conditions('ValueSet', { url: 'http://a/b' })).toEqual([{ 'idx.uri': 'url|http://a/b' }]);
    expect(conditions('ValueSet', { 'url:below': 'http://a/' })).toEqual([
      { 'idx.uri': { $regex: '^url\\|http://a/' } },
    ]);
    expect(conditions('ValueSet', { 'url:above': 'http://a/b/c' })).toEqual([
      { 'idx.uri': { $in: ['url|http://a/b/c', 'url|http://a/b', 'url|http://a'] } },
    ]);
  });

  it('_id, _lastUpdated and _content', () => {
    expect(conditions('Patient', { _id: 'a,b' })).toEqual([{ id: { $in: ['a', 'b'] } }]);
    expect(conditions('Patient', { _lastUpdated: 'ge2024-01-01' })).toEqual([
      { lu: { $gte: new Date('2024-01-01T00:00:00.000Z') } },
    ]);
    expect(conditions('Patient', { _content: 'Body Hei' })).toEqual([
      { $and: [{ 'idx.txt': { $all: ['body'] } }, { 'idx.txt': { $regex: '^hei' } }] },
    ]);
  });

  it('hints the index of the most selective clause (reference, token, uri, string, range)', () => {
    const index = (type: string, query: Record<string, string | string[]>) => built(type, query).index;
    expect(index('Observation', { subject: 'Patient/1', date: 'ge2015', code: 'x' })).toBe(
      'search_references',
    );
    expect(index('Observation', { code: 'http://loinc.org|8302-2', date: 'ge2019' })).toBe('search_tok');
    expect(index('Observation', { date: ['ge2015', 'lt2020'] })).toBe('search_range_buckets');
    expect(index('Patient', { name: 'smi', birthdate: 'ge1980' })).toBe('search_str');
    expect(index('Observation', { 'subject:identifier': 'urn:x|1' })).toBe('search_tok');
    expect(index('Observation', { 'code:not': 'x', _content: 'glucose' })).toBe('search_txt');
    expect(index('Observation', { 'patient.name': 'smith' })).toBe('search_references');
    // Left to the planner: no clause with a search index of its own, and not one type in
    // lastUpdated order bounded by nothing else.
    expect(index('Observation', { _lastUpdated: 'ge2020', 'code:missing': 'true' })).toBeUndefined();
    expect(index('Patient', { _id: 'p1' })).toBeUndefined();
  });

  it('names the primary key for one type in _id order bounded by nothing else', () => {
    const index = (type: string | undefined, query: Record<string, string | string[]>) =>
      built(type, query).index;
    expect(index('Patient', { _sort: '_id' })).toBe('_id_');
    expect(index('Patient', { _sort: '-_id,birthdate' })).toBe('_id_');
    // a clause of its own, or several types: not the key's order alone
    expect(index('Patient', { _sort: '_id', name: 'jo' })).toBe('search_str');
    expect(index('Patient', { _sort: '_id', _lastUpdated: 'ge2020' })).toBeUndefined();
    expect(index(undefined, { _type: 'Patient,Observation', _sort: '_id' })).toBeUndefined();
  });

  it('names the lastUpdated index for one type in lastUpdated order bounded by nothing else', () => {
    const index = (type: string, query: Record<string, string | string[]>) => built(type, query).index;
    const queries: Array<Record<string, string | string[]>> = [
      {},
      { _lastUpdated: ['ge2020', 'lt2021'] },
      { _sort: '_lastUpdated' },
      { _sort: '-_lastUpdated' },
    ];
    for (const query of queries) expect(index('Observation', query)).toBe('type_lastUpdated');
    // any other clause names its own index or none
    expect(index('Observation', { _lastUpdated: 'ge2020', code: 'x' })).toBe('search_tok');
    expect(index('Observation', { _lastUpdated: 'ge2020', _id: 'o1' })).toBeUndefined();
  });

  it('range clauses keep their buckets only where the bucket index may serve the search', () => {
    const search = (query: Record<string, string | string[]>) => built('Observation', query);
    const bucketKeys = (filter: object) => JSON.stringify(filter).includes('idx.bkt');
    // on the bucket index (or left to the planner) the buckets bound the scan
    expect(bucketKeys(search({ date: ['ge2015', 'lt2020'] }).filter)).toBe(true);
    expect(bucketKeys(search({ date: 'ge2015', _lastUpdated: 'ge2020' }).filter)).toBe(true);
    // on another index they would only be tested on each candidate: left out
    const onOtherIndexes: Array<Record<string, string | string[]>> = [
      { subject: 'Patient/1', date: ['ge2015', 'lt2020'] },
      { code: 'http://loinc.org|8302-2', date: 'ge2019-06', 'value-quantity': 'gt5' },
    ];
    for (const query of onOtherIndexes) {
      const page = search(query);
      expect(page.index).not.toBe('search_range_buckets');
      expect(bucketKeys(page.filter)).toBe(false);
    }
  });

  it('a range clause without its buckets matches exactly what it matched with them', () => {
    const stored = [
      { effectiveDateTime: '1999-12-31T23:59:59Z' },
      { effectiveDateTime: '2015-01-01' },
      { effectivePeriod: { start: '2014-06-01', end: '2015-03-01' } },
      { effectivePeriod: { start: '2019-12-31T23:00:00-05:00' } },
      { effectiveDateTime: '2020-01-01T00:00:00.000Z' },
      { effectiveInstant: '2024-05-31T12:30:00.5Z' },
    ].map((fields) =>
      extractIndex('r4', {
        resourceType: 'Observation',
        status: 'final',
        code: { text: 'x' },
        valueQuantity: { value: 4.5, system: 'http://unitsofmeasure.org', code: 'mg' },
        ...fields,
      }),
    );
    const values = ['2015', 'ge2015', 'lt2020', 'gt2019-12-31', 'le2015-01-01', 'ne2015', 'sa2014', 'eb2020'];
    const quantities = ['gt4', 'le4.5', 'ap5', 'ne4.5', '4.5||mg', 'lt5|http://unitsofmeasure.org|mg'];
    const cases = [
      ...values.map((date) => ({ date })),
      ...quantities.map((quantity) => ({ 'value-quantity': quantity })),
    ];
    const outcomes = new Set<boolean>();
    for (const query of cases) {
      const bounded = conditions('Observation', query)[0] as Record<string, unknown>;
      const unbounded = (
        conditions('Observation', { ...query, subject: 'Patient/1' }) as Array<Record<string, unknown>>
      ).find((condition) => !JSON.stringify(condition).includes('idx.ref'))!;
      expect(JSON.stringify(unbounded)).not.toContain('idx.bkt');
      for (const index of stored) {
        const entries = index as Record<string, string[]>;
        expect([query, evaluate(unbounded, entries)]).toEqual([query, evaluate(bounded, entries)]);
        outcomes.add(evaluate(bounded, entries));
      }
    }
    expect([...outcomes].sort()).toEqual([false, true]);
  });

  it('sort keys map to lu, id and idx.srt', () => {
    expect(built('Patient', { _sort: 'birthdate,-_lastUpdated' }).sort).toEqual({
      'idx.srt.birthdate': 1,
      lu: -1,
      id: 1,
    });
  });

  it('the id ends a sort against the direction of the key before it: an index (key desc, id asc) serves both ways', () => {
    expect(built('Observation', { _sort: '-date' }).sort).toEqual({ 'idx.srt.date': -1, id: 1 });
    expect(built('Observation', { _sort: 'date' }).sort).toEqual({ 'idx.srt.date': 1, id: -1 });
    expect(built('Observation', { _sort: '_lastUpdated' }).sort).toEqual({ lu: 1, id: -1 });
    expect(built('Observation', { _sort: 'date,-_lastUpdated' }).sort).toEqual({
      'idx.srt.date': 1,
      lu: -1,
      id: 1,
    });
  });

  it('_id sorts by the key within one type (the id order there), by id across types', () => {
    expect(built('Patient', { _sort: '_id' }).sort).toEqual({ _id: 1 });
    expect(built('Patient', { _sort: '-_id' }).sort).toEqual({ _id: -1 });
    expect(built('Patient', { _sort: '-_id,birthdate' }).sort).toEqual({ _id: -1 });
    expect(built('Patient', { _sort: 'birthdate,_id' }).sort).toEqual({ 'idx.srt.birthdate': 1, _id: 1 });
    expect(built(undefined, { _type: 'Patient,Observation', _sort: '_id' }).sort).toEqual({ id: 1 });
  });

  it('system search filters on _type', () => {
    expect(built(undefined, { _type: 'Patient,Observation' }).filter).toMatchObject({
      t: { $in: ['Patient', 'Observation'] },
    });
  });

  it('chains and _has become sub-queries finished by withChainResults', () => {
    const search = built('Observation', { 'subject:Patient.name': 'smith', code: 'x' });
    expect(search.chained).toEqual([
      {
        referenceParam: 'subject',
        version: 'r4',
        types: ['Observation'],
        filter: { t: 'Patient', del: { $ne: true }, $and: [{ 'idx.str': { $regex: '^name\\|smith' } }] },
      },
    ]);
    const finished = withChainResults(search, { chained: [['Patient/1', 'Patient/2']], has: [] });
    expect(finished.$and).toEqual([
      { 'idx.tok': 'code|x' },
      { 'idx.ref': { $in: ['subject|Patient/1', 'subject|Patient/2'] } },
    ]);
    const has = built('Patient', { '_has:Observation:patient:code': '1234' });
    // Observation's `patient` is stored as its subject's Patient references
    expect(has.has[0].referencePrefix).toBe('subject|Patient/');
    expect(has.has[0].filter).toMatchObject({ t: 'Observation' });
    expect(
      idsFromReferences(has.has[0], [
        ['patient|Patient/9', 'subject|Patient/9'],
        undefined,
        ['subject|Patient/7', 'subject|Group/8'],
      ]),
    ).toEqual(['9', '7']);
    expect(withChainResults(has, { chained: [], has: [[]] }).$and).toEqual([{ id: { $in: [] } }]);
  });

  it('injection: operators and regex syntax in values stay literal strings', () => {
    for (const hostile of ['{"$where":1}', '.*', '^(a+)+$', '$gt', 'a|b']) {
      const [condition] = conditions('Patient', { name: hostile }) as Array<
        Record<string, { $regex: string }>
      >;
      const regex = new RegExp(condition['idx.str'].$regex);
      expect(regex.test(`name|${normalizeText(hostile)}`)).toBe(true);
      expect(regex.test('name|anything-else')).toBe(false);
    }
    const tokenCondition = conditions('Patient', { identifier: '{"$gt":""}' })[0];
    expect(tokenCondition).toEqual({ 'idx.tok': 'identifier|{"$gt":""}' });
    expect(parseSearch('r4', 'Patient', { 'name[$gt]': 'x' }).unknown).toEqual(['name[$gt]']);
  });
});

/** Test-only evaluator for the condition shapes the builder emits on `idx` arrays. */
function evaluate(condition: Record<string, unknown>, index: Record<string, string[] | undefined>): boolean {
  return Object.entries(condition).every(([key, operand]) => {
    if (key === '$and')
      return (operand as Array<Record<string, unknown>>).every((part) => evaluate(part, index));
    if (key === '$or')
      return (operand as Array<Record<string, unknown>>).some((part) => evaluate(part, index));
    const values = index[key.replace(/^idx\./, '')] ?? [];
    if (typeof operand === 'string') return values.includes(operand);
    const { $regex, $in } = operand as { $regex?: string; $in?: string[] };
    if ($regex !== undefined) return values.some((value) => new RegExp($regex).test(value));
    if ($in !== undefined) return values.some((value) => $in.includes(value));
    throw new Error(`evaluator does not handle ${JSON.stringify(operand)}`);
  });
}
