/**
 * One-rule breakages of valid Synthea resources, per rule class, for the comparison with HAPI.
 * Each mutation takes a deep copy of a resource of its type and breaks exactly one rule.
 */
export type Json = Record<string, any>;

export interface Mutation {
  readonly cls: string;
  readonly name: string;
  readonly type: string;
  /** Changes the copy in place; returns false when the resource has nothing to break. */
  readonly apply: (r: Json) => boolean | void;
}

const XHTML = 'http://www.w3.org/1999/xhtml';
const UCUM = 'http://unitsofmeasure.org';
const div = (inner: string, attrs = ` xmlns="${XHTML}"`) => ({
  status: 'generated',
  div: `<div${attrs}>${inner}</div>`,
});
const narrative = (name: string, text: { status: string; div: string }): Mutation => ({
  cls: 'narrative',
  name,
  type: 'Patient',
  apply: (r) => void (r.text = text),
});
const binding = (name: string, type: string, apply: (r: Json) => boolean | void): Mutation => ({
  cls: 'binding',
  name,
  type,
  apply,
});
const invariant = (name: string, type: string, apply: (r: Json) => boolean | void): Mutation => ({
  cls: 'invariant',
  name,
  type,
  apply,
});
const date = (name: string, type: string, apply: (r: Json) => boolean | void): Mutation => ({
  cls: 'calendar',
  name,
  type,
  apply,
});

export const MUTATIONS: readonly Mutation[] = [
  // Required bindings on code, Coding and CodeableConcept elements.
  binding('Patient.gender m', 'Patient', (r) => void (r.gender = 'm')),
  binding('Patient.gender Male', 'Patient', (r) => void (r.gender = 'Male')),
  binding('HumanName.use', 'Patient', (r) => void (r.name[0].use = 'nickname-ish')),
  binding('ContactPoint.use', 'Patient', (r) => (r.telecom ? void (r.telecom[0].use = 'cell') : false)),
  binding('ContactPoint.system', 'Patient', (r) =>
    r.telecom ? void (r.telecom[0].system = 'telephone') : false,
  ),
  binding('Address.use', 'Patient', (r) => void (r.address[0].use = 'house')),
  binding('Address.type', 'Patient', (r) => void (r.address[0].type = 'mail')),
  binding('Identifier.use', 'Patient', (r) => void (r.identifier[0].use = 'main')),
  binding(
    'Patient.link.type',
    'Patient',
    (r) => void (r.link = [{ other: { reference: 'Patient/x' }, type: 'same' }]),
  ),
  binding(
    'communication.language (max VS)',
    'Patient',
    (r) =>
      void (r.communication = [{ language: { coding: [{ system: 'urn:ietf:bcp:47', code: 'english!' }] } }]),
  ),
  binding('Observation.status', 'Observation', (r) => void (r.status = 'done')),
  binding('Observation.status case', 'Observation', (r) => void (r.status = 'Final')),
  binding('Quantity.comparator', 'Observation', (r) =>
    r.valueQuantity ? void (r.valueQuantity.comparator = '=') : false,
  ),
  binding('Encounter.status', 'Encounter', (r) => void (r.status = 'complete')),
  binding(
    'Condition.clinicalStatus code',
    'Condition',
    (r) => void (r.clinicalStatus.coding[0].code = 'current'),
  ),
  binding(
    'Condition.clinicalStatus system',
    'Condition',
    (r) => void (r.clinicalStatus.coding[0].system = 'http://example.org/status'),
  ),
  binding(
    'Condition.verificationStatus',
    'Condition',
    (r) => void (r.verificationStatus.coding[0].code = 'certain'),
  ),
  binding('Claim.use', 'Claim', (r) => void (r.use = 'bill')),
  binding('Claim.status', 'Claim', (r) => void (r.status = 'open')),
  binding('Immunization.status', 'Immunization', (r) => void (r.status = 'done')),
  binding('MedicationRequest.intent', 'MedicationRequest', (r) => void (r.intent = 'prescription')),
  binding('Procedure.status', 'Procedure', (r) => void (r.status = 'finished')),
  binding('DiagnosticReport.status', 'DiagnosticReport', (r) => void (r.status = 'complete')),
  binding('CarePlan.intent', 'CarePlan', (r) => void (r.intent = 'orders')),
  binding('AllergyIntolerance.clinicalStatus', 'AllergyIntolerance', (r) =>
    r.clinicalStatus ? void (r.clinicalStatus.coding[0].code = 'on') : false,
  ),
  binding('AllergyIntolerance.criticality', 'AllergyIntolerance', (r) => void (r.criticality = 'very-high')),
  binding(
    'Attachment.contentType',
    'Patient',
    (r) => void (r.photo = [{ contentType: 'png', data: 'AAAA' }]),
  ),
  binding(
    'Narrative.status',
    'Patient',
    (r) => void (r.text = { status: 'auto', div: `<div xmlns="${XHTML}">x</div>` }),
  ),
  binding(
    'Timing.repeat.periodUnit',
    'MedicationRequest',
    (r) =>
      void (r.dosageInstruction = [{ timing: { repeat: { frequency: 1, period: 1, periodUnit: 'day' } } }]),
  ),
  // Codes claimed from a FHIR-defined code system that does not define them.
  {
    cls: 'code-system',
    name: 'v3-ActCode unknown',
    type: 'Encounter',
    apply: (r) => void (r.class.code = 'AMBULATORY'),
  },
  {
    cls: 'code-system',
    name: 'observation-category unknown',
    type: 'Observation',
    apply: (r) => (r.category ? void (r.category[0].coding[0].code = 'vitals') : false),
  },
  {
    cls: 'code-system',
    name: 'claim-type unknown',
    type: 'Claim',
    apply: (r) => void (r.type.coding[0].code = 'hospital'),
  },
  {
    cls: 'code-system',
    name: 'organization-type unknown',
    type: 'Organization',
    apply: (r) => (r.type ? void (r.type[0].coding[0].code = 'hosp') : false),
  },
  {
    cls: 'code-system',
    name: 'v2-0074 unknown',
    type: 'DiagnosticReport',
    apply: (r) => (r.category ? void (r.category[0].coding[0].code = 'LABS') : false),
  },
  // Invariants of the base definitions.
  invariant(
    'per-1 start after end',
    'Encounter',
    (r) => void (r.period = { start: '2020-01-02T10:00:00Z', end: '2020-01-01T10:00:00Z' }),
  ),
  invariant(
    'per-1 dates',
    'Procedure',
    (r) =>
      void (delete r.performedDateTime, (r.performedPeriod = { start: '2020-03-02', end: '2020-03-01' })),
  ),
  invariant(
    'obs-6 value and dataAbsentReason',
    'Observation',
    (r) => void (r.dataAbsentReason = { text: 'not asked' }),
  ),
  invariant('obs-7 component code equals code', 'Observation', (r) =>
    r.code?.coding && r.valueQuantity
      ? void (r.component = [{ code: { coding: [r.code.coding[0]] }, valueString: 'x' }])
      : false,
  ),
  invariant(
    'obs-3 empty referenceRange',
    'Observation',
    (r) => void (r.referenceRange = [{ type: { text: 'normal' } }]),
  ),
  invariant('pat-1 contact without details', 'Patient', (r) => void (r.contact = [{ gender: 'female' }])),
  invariant(
    'ext-1 value and extension',
    'Patient',
    (r) =>
      void (r.extension = [
        { url: 'http://example.org/x', valueString: 'a', extension: [{ url: 'y', valueString: 'b' }] },
      ]),
  ),
  invariant(
    'ext-1 neither',
    'Patient',
    (r) => void (r.extension = [{ url: 'http://example.org/x', id: 'e1' }]),
  ),
  invariant('qty-3 code without system', 'Observation', (r) =>
    r.valueQuantity ? void delete r.valueQuantity.system : false,
  ),
  invariant('att-1 data without contentType', 'Patient', (r) => void (r.photo = [{ data: 'AAAA' }])),
  invariant('cpt-2 value without system', 'Practitioner', (r) => void delete r.telecom[0].system),
  invariant(
    'con-4 abatement while active',
    'Condition',
    (r) => void ((r.abatementDateTime = '2020-01-01'), (r.clinicalStatus.coding[0].code = 'active')),
  ),
  invariant(
    'con-5 entered-in-error with status',
    'Condition',
    (r) => void (r.verificationStatus.coding[0].code = 'entered-in-error'),
  ),
  invariant('ref-1 dangling #id', 'Observation', (r) => void (r.subject = { reference: '#nobody' })),
  invariant(
    'rng-2 low above high',
    'Observation',
    (r) =>
      void (r.referenceRange = [
        {
          low: { value: 5, unit: 'mg', system: UCUM, code: 'mg' },
          high: { value: 1, unit: 'mg', system: UCUM, code: 'mg' },
        },
      ]),
  ),
  invariant(
    'sqty-1 comparator on SimpleQuantity',
    'Observation',
    (r) => void (r.referenceRange = [{ low: { value: 1, comparator: '<' } }]),
  ),
  invariant(
    'dom-2 nested contained',
    'Observation',
    (r) =>
      void (
        (r.contained = [
          { resourceType: 'Patient', id: 'p1', contained: [{ resourceType: 'Patient', id: 'p2' }] },
        ]),
        (r.subject = { reference: '#p1' })
      ),
  ),
  invariant(
    'dom-4 contained versionId',
    'Observation',
    (r) =>
      void (
        (r.contained = [{ resourceType: 'Patient', id: 'p1', meta: { versionId: '1' } }]),
        (r.subject = { reference: '#p1' })
      ),
  ),
  invariant(
    'dom-5 contained security',
    'Observation',
    (r) =>
      void (
        (r.contained = [
          {
            resourceType: 'Patient',
            id: 'p1',
            meta: {
              security: [{ system: 'http://terminology.hl7.org/CodeSystem/v3-Confidentiality', code: 'R' }],
            },
          },
        ]),
        (r.subject = { reference: '#p1' })
      ),
  ),
  invariant(
    'tim-5 negative period',
    'MedicationRequest',
    (r) =>
      void (r.dosageInstruction = [{ timing: { repeat: { frequency: 1, period: -1, periodUnit: 'd' } } }]),
  ),
  invariant(
    'tim-1 duration without unit',
    'MedicationRequest',
    (r) => void (r.dosageInstruction = [{ timing: { repeat: { duration: 1 } } }]),
  ),
  invariant('org-1 no identifier nor name', 'Organization', (r) => void (delete r.identifier, delete r.name)),
  invariant('ait-2 entered-in-error with clinicalStatus', 'AllergyIntolerance', (r) =>
    r.clinicalStatus
      ? void (r.verificationStatus = {
          coding: [
            {
              system: 'http://terminology.hl7.org/CodeSystem/allergyintolerance-verification',
              code: 'entered-in-error',
            },
          ],
        })
      : false,
  ),
  // Contained resources.
  {
    cls: 'contained',
    name: 'contained without id',
    type: 'ExplanationOfBenefit',
    apply: (r) => void delete r.contained[0].id,
  },
  {
    cls: 'contained',
    name: 'dom-3 unreferenced contained',
    type: 'Observation',
    apply: (r) => void (r.contained = [{ resourceType: 'Patient', id: 'lonely' }]),
  },
  {
    cls: 'contained',
    name: 'dom-3 reference to another id',
    type: 'ExplanationOfBenefit',
    apply: (r) => void (r.contained[0].id = 'renamed'),
  },
  // Narrative.
  narrative('unclosed tag', div('<p>text')),
  narrative('no XHTML namespace', div('text', '')),
  narrative('script element', div('<script>alert(1)</script>text')),
  narrative('onclick attribute', div('<p onclick="x()">text</p>')),
  narrative('unknown element', div('<blink>text</blink>')),
  narrative('empty div', div('  ')),
  narrative('bad entity', div('a &bogus; b')),
  narrative('HTML entity', div('CPT&reg; a&nbsp;b')),
  narrative('javascript URL', div('<a href="javascript:alert(1)">x</a>')),
  narrative('root not div', { status: 'generated', div: `<p xmlns="${XHTML}">text</p>` }),
  narrative('div in p', div('<p>a<div>b</div></p>')),
  narrative('dangling #link', div('<a href="#nowhere">x</a>')),
  // Calendar validity.
  date('birthDate 30 February', 'Patient', (r) => void (r.birthDate = '2019-02-30')),
  date('birthDate 29 February non-leap', 'Patient', (r) => void (r.birthDate = '2019-02-29')),
  date('dateTime 31 April', 'Encounter', (r) => void (r.period = { start: '2021-04-31T10:00:00Z' })),
  date('issued instant 31 June', 'Observation', (r) => void (r.issued = '2021-06-31T10:00:00.000Z')),
  date(
    'meta.lastUpdated 31 September',
    'Condition',
    (r) => void (r.meta = { lastUpdated: '2021-09-31T10:00:00Z' }),
  ),
  date('1900-02-29 not leap', 'Patient', (r) => void (r.deceasedDateTime = '1900-02-29T00:00:00Z')),
  // UCUM units.
  {
    cls: 'ucum',
    name: '(score)',
    type: 'Observation',
    apply: (r) => (r.valueQuantity ? void (r.valueQuantity.code = '(score)') : false),
  },
  {
    cls: 'ucum',
    name: 'made-up unit',
    type: 'Observation',
    apply: (r) => (r.valueQuantity ? void (r.valueQuantity.code = 'kilogramz') : false),
  },
  {
    cls: 'ucum',
    name: 'Duration code',
    type: 'MedicationRequest',
    apply: (r) =>
      void (r.dispenseRequest = {
        expectedSupplyDuration: { value: 30, unit: 'days', system: UCUM, code: 'days' },
      }),
  },
  // Structural classes (already equal to HAPI before this work): a control set.
  { cls: 'structure', name: 'unknown element', type: 'Patient', apply: (r) => void (r.nickname = 'x') },
  { cls: 'structure', name: 'wrong cardinality', type: 'Patient', apply: (r) => void (r.gender = ['male']) },
  { cls: 'structure', name: 'bad id', type: 'Patient', apply: (r) => void (r.id = 'a_b') },
  { cls: 'structure', name: 'missing required', type: 'Observation', apply: (r) => void delete r.status },
  { cls: 'structure', name: 'empty string', type: 'Patient', apply: (r) => void (r.name[0].family = '') },
  {
    cls: 'structure',
    name: 'control character',
    type: 'Patient',
    apply: (r) => void (r.name[0].family = 'A\u0001B'),
  },
];

/** Bundle rules: built from scratch around Synthea resources. */
export function bundleCases(resources: readonly Json[]): { cls: string; name: string; resource: Json }[] {
  const [a, b] = resources;
  const entry = (r: Json, fullUrl = `urn:uuid:${r.id}`) => ({ fullUrl, resource: r });
  const collection = (entries: Json[], extra: Json = {}) => ({
    resourceType: 'Bundle',
    type: 'collection',
    entry: entries,
    ...extra,
  });
  return [
    { cls: 'bundle', name: 'relative fullUrl', resource: collection([entry(a, `Patient/${a.id}`)]) },
    {
      cls: 'bundle',
      name: 'self link twice',
      resource: collection([entry(a)], {
        link: [
          { relation: 'self', url: 'http://a.org/1' },
          { relation: 'self', url: 'http://a.org/2' },
        ],
      }),
    },
    {
      cls: 'bundle',
      name: 'document without identifier',
      resource: {
        resourceType: 'Bundle',
        type: 'document',
        timestamp: '2020-01-01T00:00:00Z',
        entry: [entry(a)],
      },
    },
    {
      cls: 'bundle',
      name: 'transaction entry without request',
      resource: { resourceType: 'Bundle', type: 'transaction', entry: [entry(a)] },
    },
    { cls: 'bundle', name: 'total on a collection', resource: collection([entry(a)], { total: 1 }) },
    {
      cls: 'bundle',
      name: 'duplicate fullUrl',
      resource: collection([entry(a), entry(b, `urn:uuid:${a.id}`)]),
    },
    {
      cls: 'bundle',
      name: 'history fullUrl',
      resource: collection([entry(a, `http://a.org/Patient/${a.id}/_history/1`)]),
    },
    {
      cls: 'bundle',
      name: 'entry.search outside searchset',
      resource: collection([{ ...entry(a), search: { mode: 'match' } }]),
    },
    { cls: 'valid', name: 'valid collection', resource: collection([entry(a), entry(b)]) },
    {
      cls: 'valid',
      name: 'valid transaction',
      resource: {
        resourceType: 'Bundle',
        type: 'transaction',
        entry: [{ ...entry(a), request: { method: 'POST', url: a.resourceType } }],
      },
    },
  ];
}
