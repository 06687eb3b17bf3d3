import { MAX_DATE } from './fhir-date-range';
import { contentWords, extractIndex, MAX_CONTENT_WORDS } from './index-extraction';
import type { SearchIndex } from './search-index';
import { sortableNumber } from './text-normalization';
import { loadSyntheaResources, syntheaAvailable } from '@app/testing/synthea-data';

const describeWithSynthea = syntheaAvailable('r4') ? describe : describe.skip;

/** The [lo, hi] ISO strings stored for one date parameter. */
function dateRanges(index: SearchIndex, param: string): Array<[string, string]> {
  const ends = (entries: string[] | undefined) =>
    (entries ?? [])
      .filter((entry) => entry.startsWith(`${param}|`))
      .map((entry) => entry.slice(param.length + 1));
  const lows = ends(index.dtl);
  const highs = ends(index.dth);
  return lows.map((low, position) => [low, highs[position]]);
}

function firstOfType(resources: Array<Record<string, unknown>>, type: string): Record<string, unknown> {
  const found = resources.find((resource) => resource.resourceType === type);
  if (!found) throw new Error(`no ${type} in the sample`);
  return found;
}

describeWithSynthea('extractIndex on Synthea R4 resources', () => {
  const resources = loadSyntheaResources('r4', 2);

  it('indexes a Patient: name parts, birthdate, gender, identifiers', () => {
    const patient = firstOfType(resources, 'Patient') as any;
    const index = extractIndex('r4', patient);
    const family = String(patient.name[0].family).toLowerCase();
    expect(index.str).toContain(`family|${family}`);
    expect(index.str).toContain(`name|${family}`);
    expect(index.str).toContain(`family:exact|${patient.name[0].family}`);
    expect(index.str).toContain(`given|${String(patient.name[0].given[0]).toLowerCase()}`);
    expect(index.tok).toContain(`gender|${patient.gender}`);
    const identifier = patient.identifier[1];
    expect(index.tok).toContain(`identifier|${identifier.system}|${identifier.value}`);
    expect(index.tok).toContain(`identifier|${identifier.value}`);
    expect(dateRanges(index, 'birthdate')).toEqual([
      [`${patient.birthDate}T00:00:00.000Z`, `${patient.birthDate}T23:59:59.999Z`],
    ]);
    expect(index.has).toEqual(expect.arrayContaining(['name', 'birthdate', 'gender', 'identifier']));
  });

  it('indexes an Observation: code, date, value-quantity, subject and patient', () => {
    const observation = resources.find(
      (resource) => resource.resourceType === 'Observation' && 'valueQuantity' in resource,
    ) as any;
    const index = extractIndex('r4', observation);
    const coding = observation.code.coding[0];
    expect(index.tok).toEqual(
      expect.arrayContaining([`code|${coding.code}`, `code|${coding.system}|${coding.code}`]),
    );
    expect(index.str).toContain(`code:text|${String(coding.display).toLowerCase()}`);
    expect(index.ref).toEqual(expect.arrayContaining([`subject|${observation.subject.reference}`]));
    // `patient` is the subject's Patient references (stored-params.ts): no entries of its own, its marker kept
    expect(index.ref).not.toContain(`patient|${observation.subject.reference}`);
    expect(index.has).toEqual(expect.arrayContaining(['patient', 'subject', 'combo-code']));
    expect(index.tok?.some((entry) => entry.startsWith('combo-code|'))).toBe(false);
    const { value, system, code } = observation.valueQuantity;
    expect(index.qty).toEqual(
      expect.arrayContaining([
        `value-quantity=${sortableNumber(value)}`,
        `value-quantity|${system}|${code}|${sortableNumber(value)}`,
        `value-quantity||${code}|${sortableNumber(value)}`,
      ]),
    );
    expect(dateRanges(index, 'date')[0][0]).toBe(new Date(observation.effectiveDateTime).toISOString());
  });

  it('indexes an Encounter period, Condition and MedicationRequest', () => {
    const encounter = extractIndex('r4', firstOfType(resources, 'Encounter'));
    expect(dateRanges(encounter, 'date')).toHaveLength(1);
    expect(encounter.ref?.some((entry) => entry.startsWith('subject|Patient/'))).toBe(true);
    expect(encounter.ref?.some((entry) => entry.startsWith('*patient|Patient/'))).toBe(true);
    expect(encounter.tok?.some((entry) => entry.startsWith('class|'))).toBe(true);
    const condition = extractIndex('r4', firstOfType(resources, 'Condition'));
    expect(condition.tok?.some((entry) => entry.startsWith('code|http://snomed.info/sct|'))).toBe(true);
    expect(condition.tok).toContain('clinical-status|active');
    expect(dateRanges(condition, 'onset-date')).toHaveLength(1);
    const request = extractIndex('r4', firstOfType(resources, 'MedicationRequest'));
    expect(
      request.tok?.some((entry) => entry.startsWith('code|http://www.nlm.nih.gov/research/umls/rxnorm|')),
    ).toBe(true);
    expect(request.ref?.some((entry) => entry.startsWith('subject|Patient/'))).toBe(true);
    expect(dateRanges(request, 'authoredon')).toHaveLength(1);
  });

  it('never throws and always returns plain arrays for every sample resource', () => {
    for (const resource of resources) {
      const index = extractIndex('r4', resource);
      for (const entries of [index.tok, index.str, index.ref, index.uri, index.txt]) {
        expect(entries === undefined || entries.every((entry) => typeof entry === 'string')).toBe(true);
      }
    }
  });
});

describe('extractIndex on hand-written resources', () => {
  it('token: CodeableConcept, Coding without system, Identifier, ContactPoint, boolean, code', () => {
    const index = extractIndex('r4', {
      resourceType: 'Patient',
      active: true,
      gender: 'other',
      identifier: [{ system: 'urn:sys', value: 'A|1' }],
      telecom: [{ system: 'email', value: 'x@example.org' }],
      maritalStatus: { coding: [{ code: 'M', display: 'Married' }], text: 'Verheiratet' },
    });
    expect(index.tok).toEqual(
      expect.arrayContaining([
        'active|true',
        'gender|other',
        'identifier|urn:sys|A\\|1',
        'identifier|A\\|1',
        'email|x@example.org',
        'telecom|email|x@example.org',
      ]),
    );
    expect(index.tok).not.toContain('phone|x@example.org');
  });

  it('token :text entries from CodeableConcept.text and Coding.display', () => {
    const index = extractIndex('r4', {
      resourceType: 'Condition',
      code: { coding: [{ system: 's', code: 'c', display: 'Grippe Aviaire' }], text: 'Fièvre' },
    });
    expect(index.str).toEqual(expect.arrayContaining(['code:text|grippe aviaire', 'code:text|fievre']));
    expect(index.tok).toEqual(expect.arrayContaining(['code|c', 'code|s|c']));
  });

  it('string: accents, case and whitespace are normalized; exact copy kept', () => {
    const index = extractIndex('r4', {
      resourceType: 'Patient',
      name: [{ family: 'Müller  Lüdenscheidt', given: ['José'], text: 'José Müller' }],
      address: [{ line: ['Rue de l’Église 5'], city: 'Zürich', postalCode: '8001', country: 'CH' }],
    });
    expect(index.str).toEqual(
      expect.arrayContaining([
        'family|muller ludenscheidt',
        'family:exact|Müller  Lüdenscheidt',
        'given|jose',
        'name|jose muller',
        'address|rue de l’eglise 5',
        'address-city|zurich',
        'address-postalcode|8001',
      ]),
    );
  });

  it('reference: relative, versioned, absolute, contained, identifier and resolve() type filter', () => {
    const index = extractIndex('r4', {
      resourceType: 'Observation',
      subject: { reference: 'Group/g1' },
      performer: [{ reference: 'Practitioner/p1/_history/3' }, { reference: '#contained' }],
      encounter: { reference: 'http://other.example/fhir/Encounter/e1' },
      basedOn: [{ identifier: { system: 'urn:orders', value: 'o-1' } }],
    });
    expect(index.ref).toEqual(
      expect.arrayContaining([
        'subject|Group/g1',
        'performer|Practitioner/p1',
        'encounter|http://other.example/fhir/Encounter/e1',
      ]),
    );
    // `patient` is `Observation.subject.where(resolve() is Patient)`: a Group subject is not a patient.
    expect(index.ref?.some((entry) => entry.startsWith('patient|'))).toBe(false);
    expect(index.ref?.some((entry) => entry.includes('#'))).toBe(false);
    expect(index.tok).toContain('based-on:identifier|urn:orders|o-1');
  });

  it("reference to this server's base (serviceBase): stored relative; a version, another base or a canonical's version kept", () => {
    const resource = {
      resourceType: 'Observation',
      subject: { reference: 'https://me.example/r4/Patient/p1' },
      performer: [
        { reference: 'https://me.example/r4/Practitioner/p2/_history/3' },
        { reference: 'https://me.example/stu3/Practitioner/p3' },
      ],
      encounter: { reference: 'http://other.example/r4/Encounter/e1' },
    };
    const index = extractIndex('r4', resource, { fullText: false, serviceBase: 'https://me.example' });
    expect(index.ref?.sort()).toEqual([
      // Observation's compartment parameters (subject, performer) reference Patient/p1 in its relative form
      '*patient|Patient/p1',
      'encounter|http://other.example/r4/Encounter/e1',
      'performer|https://me.example/r4/Practitioner/p2/_history/3',
      'performer|https://me.example/stu3/Practitioner/p3',
      'subject|Patient/p1',
    ]);
    // without the option every reference stays as written
    expect(extractIndex('r4', resource, { fullText: false }).ref).toContain(
      'subject|https://me.example/r4/Patient/p1',
    );
    const response = extractIndex(
      'r4',
      { resourceType: 'QuestionnaireResponse', questionnaire: 'https://me.example/r4/Questionnaire/q1' },
      { fullText: false, serviceBase: 'https://me.example' },
    );
    expect(response.ref).toEqual(['questionnaire|Questionnaire/q1']);
  });

  it('date: precision ranges, open Period, Timing events', () => {
    const observation = extractIndex('r4', {
      resourceType: 'Observation',
      effectivePeriod: { start: '2020-03' },
      issued: '2020-03-05T10:00:00.5+02:00',
    });
    expect(dateRanges(observation, 'date')).toEqual([['2020-03-01T00:00:00.000Z', MAX_DATE.toISOString()]]);
    const request = extractIndex('r4', {
      resourceType: 'ServiceRequest',
      occurrenceTiming: { event: ['2021', '2022-02-02'] },
    });
    expect(dateRanges(request, 'occurrence')).toEqual([
      ['2021-01-01T00:00:00.000Z', '2021-12-31T23:59:59.999Z'],
      ['2022-02-02T00:00:00.000Z', '2022-02-02T23:59:59.999Z'],
    ]);
    expect(
      extractIndex('r4', { resourceType: 'Observation', issued: '2020-03-05T10:00:00.5+02:00' }).dtl,
    ).toBeUndefined();
  });

  it('number, quantity (Money currency) and uri', () => {
    const risk = extractIndex('r4', {
      resourceType: 'RiskAssessment',
      prediction: [{ probabilityDecimal: 0.25 }],
    });
    expect(risk.num).toEqual([`probability|${sortableNumber(0.25)}`]);
    const charge = extractIndex('r4', {
      resourceType: 'ChargeItem',
      priceOverride: { value: 12.5, currency: 'EUR' },
    });
    expect(charge.qty).toEqual([
      `price-override=${sortableNumber(12.5)}`,
      `price-override||EUR|${sortableNumber(12.5)}`,
    ]);
    const valueSet = extractIndex('r4', { resourceType: 'ValueSet', url: 'http://example.org/vs/a' });
    expect(valueSet.uri).toContain('url|http://example.org/vs/a');
  });

  it('common parameters (_tag, _profile, _security) apply to every type', () => {
    const index = extractIndex('r4', {
      resourceType: 'Basic',
      meta: { tag: [{ system: 'urn:t', code: 'x' }], profile: ['http://example.org/p'] },
    });
    expect(index.tok).toEqual(expect.arrayContaining(['_tag|x', '_tag|urn:t|x']));
    expect(index.ref ?? index.uri).toEqual(expect.arrayContaining([expect.stringContaining('_profile|')]));
  });

  it('_content words: lower-case, accent-free, deduplicated, from string and markdown elements only', () => {
    const words = contentWords('r4', {
      resourceType: 'Observation',
      id: 'abc-123',
      status: 'final',
      text: { status: 'generated', div: '<div>ignored</div>' },
      code: { coding: [{ system: 'http://loinc.org', code: '8302-2' }], text: 'Body Height Body' },
      effectiveDateTime: '2020-01-01T10:00:00Z',
      note: [{ text: 'Élevé' }],
    });
    // `final` (status) and `8302` (Coding.code) are codes, searched by token parameters.
    expect(words).toEqual(['body', 'height', 'eleve']);
  });

  it('_content words (R4): data types, backbones, extensions, contained resources; no codes or references', () => {
    const words = contentWords('r4', {
      resourceType: 'Patient',
      id: 'p1',
      meta: { source: 'urn:source', versionId: '7' },
      extension: [
        { url: 'http://example.org/nickname', valueString: 'Nicky' },
        { url: 'http://example.org/bio', valueMarkdown: 'Plays **cello**' },
        { url: 'http://example.org/code', valueCode: 'secretcode' },
      ],
      identifier: [{ system: 'http://hospital.example/mrn', value: 'MRN-42' }],
      name: [{ id: 'elementid', use: 'official', family: 'Müller', given: ['Anna'] }],
      _birthDate: { extension: [{ url: 'http://example.org/place', valueString: 'Lyon' }] },
      birthDate: '1980-02-03',
      gender: 'female',
      address: [{ use: 'home', line: ['12 Rue Haute'], city: 'Paris' }],
      maritalStatus: {
        coding: [
          { system: 'http://terminology.hl7.org/CodeSystem/v3-MaritalStatus', code: 'M', display: 'Married' },
        ],
      },
      contact: [{ relationship: [{ text: 'Sister' }], name: { family: 'Dupont' } }],
      managingOrganization: { reference: 'Organization/org7', display: 'Saint Louis' },
      contained: [{ resourceType: 'Practitioner', id: 'gp', active: true, name: [{ family: 'House' }] }],
      generalPractitioner: [{ reference: '#gp' }],
    });
    expect(words.sort()).toEqual(
      [
        'nicky',
        'plays',
        'cello',
        'mrn',
        '42',
        'muller',
        'anna',
        'lyon',
        '12',
        'rue',
        'haute',
        'paris',
        'married',
        'sister',
        'dupont',
        'saint',
        'louis',
        'house',
      ].sort(),
    );
  });

  it('_content words (R4): codes, quantity codes and elements without a definition are left out', () => {
    const words = contentWords('r4', {
      resourceType: 'Observation',
      status: 'amended',
      category: [{ coding: [{ code: 'vital-signs', display: 'Vital Signs' }] }],
      code: { coding: [{ system: 'http://loinc.org', code: '29463-7' }] },
      valueQuantity: { value: 70, unit: 'kilogram', system: 'http://unitsofmeasure.org', code: 'kg' },
      component: [
        { code: { text: 'Waist' }, valueString: 'wide', interpretation: [{ coding: [{ code: 'H' }] }] },
      ],
      notAnElement: 'guessed',
    });
    expect(words.sort()).toEqual(['kilogram', 'signs', 'vital', 'waist', 'wide']);
  });

  it("_content words (STU3 and DSTU2) follow those versions' types", () => {
    const stu3 = contentWords('stu3', {
      resourceType: 'Condition',
      clinicalStatus: 'active',
      verificationStatus: 'confirmed',
      code: { coding: [{ system: 'http://snomed.info/sct', code: '444814009', display: 'Viral sinusitis' }] },
      subject: { reference: 'Patient/p1' },
      note: [{ text: 'Since Monday' }],
    });
    expect(stu3.sort()).toEqual(['monday', 'since', 'sinusitis', 'viral']);
    const dstu2 = contentWords('dstu2', {
      resourceType: 'Observation',
      status: 'final',
      code: { coding: [{ system: 'http://loinc.org', code: '8302-2', display: 'Body Height' }] },
      comments: 'Measured standing',
      subject: { reference: 'Patient/p1' },
      extension: [{ url: 'http://example.org/x', valueString: 'Ward Nine' }],
    });
    expect(dstu2.sort()).toEqual(['body', 'height', 'measured', 'nine', 'standing', 'ward']);
  });

  it(`_content words stop at ${MAX_CONTENT_WORDS}`, () => {
    const given = Array.from({ length: MAX_CONTENT_WORDS + 20 }, (_, i) => `w${i}`);
    const words = contentWords('r4', { resourceType: 'Patient', name: [{ given }] });
    expect(words).toEqual(given.slice(0, MAX_CONTENT_WORDS));
  });

  it('_content words only with full text on; every other entry the same either way', () => {
    const condition = {
      resourceType: 'Condition',
      subject: { reference: 'Patient/p1' },
      code: { coding: [{ system: 'http://snomed.info/sct', code: '444814009' }], text: 'Viral sinusitis' },
    };
    const on = extractIndex('r4', condition, { fullText: true });
    const off = extractIndex('r4', condition, { fullText: false });
    expect(on.txt).toEqual(expect.arrayContaining(['viral', 'sinusitis']));
    expect(off.txt).toBeUndefined();
    const { txt: _words, ...rest } = on;
    expect(off).toEqual(rest);
  });

  it('STU3 and DSTU2 (derived) parameters', () => {
    const stu3 = extractIndex('stu3', {
      resourceType: 'MedicationRequest',
      subject: { reference: 'Patient/p1' },
      medicationCodeableConcept: { coding: [{ system: 'rx', code: '1' }] },
    });
    expect(stu3.ref).toEqual(expect.arrayContaining(['subject|Patient/p1', '*patient|Patient/p1']));
    expect(stu3.has).toEqual(expect.arrayContaining(['patient', 'subject']));
    expect(stu3.tok).toContain('code|rx|1');
    const dstu2 = extractIndex('dstu2', {
      resourceType: 'MedicationOrder',
      status: 'active',
      patient: { reference: 'Patient/p1' },
      dateWritten: '2015-02-21',
      medicationCodeableConcept: { coding: [{ system: 'rx', code: '1' }] },
    });
    // DSTU2's `patient` there is `subject`'s Patient references: stored once, under `subject`
    expect(dstu2.ref).toEqual(expect.arrayContaining(['subject|Patient/p1', '*patient|Patient/p1']));
    expect(dstu2.has).toContain('patient');
    expect(dstu2.tok).toEqual(expect.arrayContaining(['status|active', 'code|rx|1']));
    // `datewritten` and `authoredon` (kept from STU3) read the same element: stored once
    expect(dstu2.has).toEqual(expect.arrayContaining(['datewritten', 'authoredon']));
    expect(dateRanges(dstu2, 'authoredon')).toEqual([
      ['2015-02-21T00:00:00.000Z', '2015-02-21T23:59:59.999Z'],
    ]);
    const condition = extractIndex('dstu2', {
      resourceType: 'Condition',
      patient: { reference: 'Patient/p1' },
    });
    expect(condition.ref).toContain('patient|Patient/p1');
  });

  it('unknown types and resources without resourceType give an empty index', () => {
    expect(extractIndex('r4', { resourceType: 'NotAType' })).toEqual({});
    expect(extractIndex('r4', {})).toEqual({});
  });
});
