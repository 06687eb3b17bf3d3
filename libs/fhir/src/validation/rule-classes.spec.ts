import { validateResource } from './validate-resource';

/**
 * A fixed set of one-rule breakages per rule class, each with the exact error issues
 * expected as `path [rule]`. bench/validation-vs-hapi runs the same classes against HAPI.
 */
type Json = Record<string, unknown>;

function errorsOf(resource: unknown, version: 'r4' | 'stu3' = 'r4'): string[] {
  return validateResource(version, resource)
    .filter((i) => i.severity === 'error')
    .map((i) => `${i.path} [${i.rule ?? i.code}]`);
}

const XHTML = 'http://www.w3.org/1999/xhtml';
const UCUM = 'http://unitsofmeasure.org';
const patient = (extra: Json = {}): Json => ({ resourceType: 'Patient', ...extra });
const observation = (extra: Json = {}): Json => ({
  resourceType: 'Observation',
  status: 'final',
  code: { text: 'x' },
  ...extra,
});
const condition = (clinicalStatus: Json): Json => ({
  resourceType: 'Condition',
  clinicalStatus,
  subject: { reference: 'Patient/1' },
});
const clinical = (code: string, system = 'http://terminology.hl7.org/CodeSystem/condition-clinical') => ({
  coding: [{ system, code }],
});
const withDiv = (div: string): Json => patient({ text: { status: 'generated', div } });

const CASES: Record<string, [string, unknown, string[]][]> = {
  'required bindings': [
    [
      'code',
      patient({ gender: 'm' }),
      ['Patient.gender [http://hl7.org/fhir/ValueSet/administrative-gender]'],
    ],
    [
      'code is case-sensitive',
      observation({ status: 'Final' }),
      ['Observation.status [http://hl7.org/fhir/ValueSet/observation-status]'],
    ],
    [
      'HumanName.use',
      patient({ name: [{ use: 'nick' }] }),
      ['Patient.name[0].use [http://hl7.org/fhir/ValueSet/name-use]'],
    ],
    [
      'ContactPoint.use',
      patient({ telecom: [{ system: 'phone', value: '1', use: 'cell' }] }),
      ['Patient.telecom[0].use [http://hl7.org/fhir/ValueSet/contact-point-use]'],
    ],
    [
      'Address.use',
      patient({ address: [{ use: 'house' }] }),
      ['Patient.address[0].use [http://hl7.org/fhir/ValueSet/address-use]'],
    ],
    [
      'CodeableConcept: unknown code also fails its code system',
      condition(clinical('current')),
      [
        'Condition.clinicalStatus.coding[0].code [http://terminology.hl7.org/CodeSystem/condition-clinical]',
        'Condition.clinicalStatus [http://hl7.org/fhir/ValueSet/condition-clinical]',
      ],
    ],
    [
      'CodeableConcept: other system',
      condition(clinical('active', 'http://e.org/s')),
      ['Condition.clinicalStatus [http://hl7.org/fhir/ValueSet/condition-clinical]'],
    ],
    [
      'CodeableConcept: text only',
      condition({ text: 'active' }),
      ['Condition.clinicalStatus [http://hl7.org/fhir/ValueSet/condition-clinical]'],
    ],
    [
      'CodeableConcept: a foreign coding beside a valid one (as HAPI)',
      condition({ coding: [...clinical('active').coding, { system: 'http://e.org/s', code: 'on' }] }),
      ['Condition.clinicalStatus [http://hl7.org/fhir/ValueSet/condition-clinical]'],
    ],
    [
      'Quantity.comparator',
      observation({ valueQuantity: { value: 1, comparator: '=' } }),
      ['Observation.valueQuantity.comparator [http://hl7.org/fhir/ValueSet/quantity-comparator]'],
    ],
    [
      'maximum value set (communication.language)',
      patient({
        communication: [{ language: { coding: [{ system: 'urn:ietf:bcp:47', code: 'english!' }] } }],
      }),
      [
        'Patient.communication[0].language.coding[0].code [urn:ietf:bcp:47]',
        'Patient.communication[0].language [http://hl7.org/fhir/ValueSet/all-languages]',
      ],
    ],
    [
      'MIME type grammar',
      patient({ photo: [{ contentType: 'png' }] }),
      ['Patient.photo[0].contentType [http://hl7.org/fhir/ValueSet/mimetypes]'],
    ],
  ],
  'code systems': [
    [
      'unknown code of a FHIR-defined system, unbound element',
      observation({
        valueCodeableConcept: {
          coding: [{ system: 'http://terminology.hl7.org/CodeSystem/v3-ActCode', code: 'NOPE' }],
        },
      }),
      ['Observation.valueCodeableConcept.coding[0].code [http://terminology.hl7.org/CodeSystem/v3-ActCode]'],
    ],
    [
      'Quantity unit from a FHIR-defined system',
      observation({
        valueQuantity: {
          value: 1,
          system: 'http://terminology.hl7.org/CodeSystem/v3-orderableDrugForm',
          code: 'Tabz',
        },
      }),
      ['Observation.valueQuantity.code [http://terminology.hl7.org/CodeSystem/v3-orderableDrugForm]'],
    ],
  ],
  invariants: [
    [
      'per-1',
      {
        resourceType: 'Encounter',
        status: 'finished',
        class: { code: 'AMB' },
        period: { start: '2020-01-02', end: '2020-01-01' },
      },
      ['Encounter.period [per-1]'],
    ],
    ['obs-6', observation({ valueString: 'x', dataAbsentReason: { text: 'n/a' } }), ['Observation [obs-6]']],
    [
      'obs-7',
      observation({
        code: { coding: [{ system: 'http://loinc.org', code: '1-8' }] },
        valueString: 'x',
        component: [{ code: { coding: [{ system: 'http://loinc.org', code: '1-8' }] }, valueString: 'y' }],
      }),
      ['Observation [obs-7]'],
    ],
    ['pat-1', patient({ contact: [{ gender: 'male' }] }), ['Patient.contact[0] [pat-1]']],
    [
      'ext-1',
      patient({
        extension: [{ url: 'http://e.org/x', valueString: 'a', extension: [{ url: 'y', valueString: 'b' }] }],
      }),
      ['Patient.extension[0] [ext-1]'],
    ],
    [
      'qty-3',
      observation({ valueQuantity: { value: 1, code: 'kg' } }),
      ['Observation.valueQuantity [qty-3]'],
    ],
    ['att-1', patient({ photo: [{ data: 'AAAA' }] }), ['Patient.photo[0] [att-1]']],
    ['con-4', { ...condition(clinical('active')), abatementDateTime: '2020-01-01' }, ['Condition [con-4]']],
    ['ref-1', observation({ subject: { reference: '#nobody' } }), ['Observation.subject [ref-1]']],
    [
      'sqty-1 (SimpleQuantity profile)',
      observation({ referenceRange: [{ low: { value: 1, comparator: '<' } }] }),
      ['Observation.referenceRange[0].low [sqty-1]'],
    ],
    [
      'rng-2',
      observation({
        valueRange: {
          low: { value: 5, system: UCUM, code: 'mg' },
          high: { value: 1, system: UCUM, code: 'mg' },
        },
      }),
      ['Observation.valueRange [rng-2]'],
    ],
  ],
  'contained resources': [
    [
      'without id',
      observation({ contained: [{ resourceType: 'Patient' }] }),
      ['Observation.contained[0].id [required]', 'Observation [dom-3]'],
    ],
    [
      'dom-3 unreferenced',
      observation({ contained: [{ resourceType: 'Patient', id: 'p' }] }),
      ['Observation [dom-3]'],
    ],
    [
      'dom-2 nested',
      observation({
        contained: [{ resourceType: 'Patient', id: 'p', contained: [{ resourceType: 'Patient', id: 'q' }] }],
        subject: { reference: '#p' },
      }),
      [
        'Observation.contained[0].contained[0].id [required]',
        'Observation.contained[0] [dom-3]',
        'Observation [dom-2]',
      ].slice(1),
    ],
  ],
  narrative: [
    ['not well-formed', withDiv(`<div xmlns="${XHTML}"><p>x</div>`), ['Patient.text.div [txt-1]']],
    ['no XHTML namespace', withDiv('<div>x</div>'), ['Patient.text.div [txt-1]']],
    ['script', withDiv(`<div xmlns="${XHTML}"><script>x</script></div>`), ['Patient.text.div [txt-1]']],
    [
      'event handler',
      withDiv(`<div xmlns="${XHTML}"><p onclick="x()">x</p></div>`),
      ['Patient.text.div [txt-1]'],
    ],
    [
      'javascript: URL',
      withDiv(`<div xmlns="${XHTML}"><a href="javascript:x()">x</a></div>`),
      ['Patient.text.div [txt-1]'],
    ],
    [
      'unknown element',
      withDiv(`<div xmlns="${XHTML}"><blink>x</blink></div>`),
      ['Patient.text.div [txt-1]'],
    ],
    ['empty', withDiv(`<div xmlns="${XHTML}"> </div>`), ['Patient.text.div [txt-2]']],
    ['bad entity', withDiv(`<div xmlns="${XHTML}">&bogus;</div>`), ['Patient.text.div [txt-1]']],
    // XML has no HTML entities: the reference refuses them in a narrative too
    ['HTML entity', withDiv(`<div xmlns="${XHTML}">CPT&reg; a&nbsp;b</div>`), ['Patient.text.div [txt-1]']],
    [
      'dangling #link',
      withDiv(`<div xmlns="${XHTML}"><a href="#nowhere">x</a></div>`),
      ['Patient.text.div [txt-1]'],
    ],
  ],
  'calendar dates': [
    ['30 February', patient({ birthDate: '2019-02-30' }), ['Patient.birthDate [value]']],
    ['29 February, not a leap year', patient({ birthDate: '1900-02-29' }), ['Patient.birthDate [value]']],
    [
      '31 April dateTime',
      patient({ deceasedDateTime: '2021-04-31T10:00:00Z' }),
      ['Patient.deceasedDateTime [value]'],
    ],
    [
      '31 June instant',
      patient({ meta: { lastUpdated: '2021-06-31T10:00:00Z' } }),
      ['Patient.meta.lastUpdated [value]'],
    ],
  ],
  'UCUM units': [
    [
      '(score)',
      observation({ valueQuantity: { value: 1, system: UCUM, code: '(score)' } }),
      [`Observation.valueQuantity.code [${UCUM}]`],
    ],
    [
      'Duration',
      observation({ valueQuantity: { value: 1, system: UCUM, code: 'days' } }),
      [`Observation.valueQuantity.code [${UCUM}]`],
    ],
  ],
  bundles: [
    [
      'relative fullUrl',
      {
        resourceType: 'Bundle',
        type: 'collection',
        entry: [{ fullUrl: 'Patient/1', resource: patient({ id: '1' }) }],
      },
      ['Bundle.entry[0].fullUrl [invalid]'],
    ],
    [
      'self link twice',
      {
        resourceType: 'Bundle',
        type: 'collection',
        link: [
          { relation: 'self', url: 'http://a/1' },
          { relation: 'self', url: 'http://a/2' },
        ],
      },
      ['Bundle.link[1].relation [invalid]'],
    ],
    [
      'document without identifier',
      { resourceType: 'Bundle', type: 'document', timestamp: '2020-01-01T00:00:00Z' },
      // no first entry: is(Composition) of nothing is false, as the reference evaluates it
      ['Bundle [bdl-9]', 'Bundle [bdl-11]'],
    ],
    [
      'transaction entry without request',
      {
        resourceType: 'Bundle',
        type: 'transaction',
        entry: [{ fullUrl: 'urn:uuid:0c3151bd-1cbf-4d64-b04d-cd9187a4c6e0', resource: patient() }],
      },
      ['Bundle [bdl-3]'],
    ],
  ],
  'bad input': [
    ['control character', patient({ name: [{ family: 'A\u0001B' }] }), ['Patient.name[0].family [value]']],
    ['broken UTF-16', patient({ name: [{ family: 'A\ud800B' }] }), ['Patient.name[0].family [value]']],
  ],
};

describe('validation rule classes (r4)', () => {
  for (const [cls, cases] of Object.entries(CASES)) {
    describe(cls, () => {
      it.each(cases)('%s', (_name, resource, expected) => {
        expect(errorsOf(resource)).toEqual(expected);
      });
    });
  }

  it('accepts valid values of each class', () => {
    const valid = [
      patient({
        gender: 'male',
        birthDate: '2020-02-29',
        telecom: [{ system: 'phone', value: '1', use: 'mobile' }],
      }),
      condition(clinical('active')),
      observation({ valueQuantity: { value: 1, system: UCUM, code: 'mm[Hg]' } }),
      observation({ contained: [{ resourceType: 'Patient', id: 'p' }], subject: { reference: '#p' } }),
      {
        ...withDiv(
          `<div xmlns="${XHTML}"><p>a&#160;&amp;<a href="#x">b</a><a name="x">c</a></p><img src="#p"/></div>`,
        ),
        id: 'p',
      },
      patient({ communication: [{ language: { coding: [{ system: 'urn:ietf:bcp:47', code: 'en-US' }] } }] }),
      patient({ photo: [{ contentType: 'text/plain; charset=UTF-8', data: 'AAAA' }] }),
      {
        resourceType: 'Bundle',
        type: 'collection',
        entry: [{ fullUrl: 'http://a.org/fhir/Patient/1', resource: patient({ id: '1' }) }],
      },
    ];
    for (const resource of valid) expect(errorsOf(resource)).toEqual([]);
  });

  it('says which code systems it could not check, as information that never refuses', () => {
    const issues = validateResource(
      'r4',
      observation({ code: { coding: [{ system: 'http://loinc.org', code: 'x' }] } }),
    );
    expect(issues).toEqual([expect.objectContaining({ severity: 'information', rule: 'http://loinc.org' })]);
  });

  it('checks STU3 from its own package', () => {
    expect(errorsOf({ resourceType: 'Patient', gender: 'm' }, 'stu3')).toEqual([
      'Patient.gender [http://hl7.org/fhir/ValueSet/administrative-gender]',
    ]);
    expect(
      errorsOf(
        { resourceType: 'Encounter', status: 'finished', period: { start: '2020-02-02', end: '2020-01-01' } },
        'stu3',
      ),
    ).toEqual(['Encounter.period [per-1]']);
  });
});
