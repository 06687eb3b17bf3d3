import { bundleInvariantIssues, validateResource } from './validate-resource';

/**
 * Rules of the reference validator (HL7's, inside HAPI) that the base definitions do not carry as
 * FHIRPath: code whitespace, required codes given only as extensions, defining canonical URLs, bundle
 * reference resolution, the corrected opd-3; and the Bundle invariants of a transaction's envelope.
 */
function errorsOf(resource: unknown, version: 'r4' | 'stu3' | 'dstu2' = 'r4'): string[] {
  return validateResource(version, resource)
    .filter((i) => i.severity === 'error')
    .map((i) => `${i.path} [${i.rule ?? i.code}]`);
}

const DATA_ABSENT = {
  extension: [{ url: 'http://hl7.org/fhir/StructureDefinition/data-absent-reason', valueCode: 'unknown' }],
};

describe('code whitespace', () => {
  const codeSystem = (code: string) => ({
    resourceType: 'CodeSystem',
    url: 'http://a.org/cs',
    status: 'active',
    content: 'complete',
    concept: [{ code }],
  });

  it('a code has no whitespace other than single inner spaces, Unicode spaces included', () => {
    for (const code of ['CHEST\u00a0', '\u00a0CHEST', 'a\tb', 'a  b', 'a\u2003b', ' a', 'a '])
      expect(errorsOf(codeSystem(code))).toEqual(['CodeSystem.concept[0].code [value]']);
    for (const code of ['CHEST', 'a b', 'a-b.c', 'é']) expect(errorsOf(codeSystem(code))).toEqual([]);
  });

  it('in every version', () => {
    const gender = { resourceType: 'Patient', gender: 'male\u00a0' };
    expect(errorsOf(gender, 'stu3')).toContain('Patient.gender [value]');
    expect(errorsOf(gender, 'dstu2')).toContain('Patient.gender [value]');
    // a string may hold any of them
    expect(errorsOf({ resourceType: 'Patient', name: [{ text: 'A\u00a0B  C' }] }, 'dstu2')).toEqual([]);
  });
});

describe('a required binding needs a code, not only an extension', () => {
  const documentReference = (extra: Record<string, unknown>) => ({
    resourceType: 'DocumentReference',
    content: [{ attachment: { url: 'http://a.org/doc' } }],
    ...extra,
  });

  it('`_status` without `status` is refused; with it, the extension is fine', () => {
    expect(errorsOf(documentReference({ _status: DATA_ABSENT }))).toEqual([
      'DocumentReference.status [http://hl7.org/fhir/ValueSet/document-reference-status]',
    ]);
    expect(errorsOf(documentReference({ status: 'current', _status: DATA_ABSENT }))).toEqual([]);
    const attachment = { _contentType: DATA_ABSENT, url: 'http://a.org/doc' };
    expect(errorsOf(documentReference({ status: 'current', content: [{ attachment }] }))).toEqual([
      'DocumentReference.content[0].attachment.contentType [http://hl7.org/fhir/ValueSet/mimetypes]',
    ]);
  });

  it('a repeating code: each position with an extension and no value', () => {
    const questionnaire = {
      resourceType: 'Questionnaire',
      status: 'draft',
      subjectType: ['Patient', null],
      _subjectType: [null, DATA_ABSENT],
    };
    expect(errorsOf(questionnaire)).toEqual([
      'Questionnaire.subjectType[1] [http://hl7.org/fhir/ValueSet/resource-types]',
    ]);
    expect(errorsOf({ ...questionnaire, subjectType: ['Patient', 'Group'] })).toEqual([]);
  });

  it('an element without a required binding may carry only an extension', () => {
    expect(errorsOf({ resourceType: 'Patient', _birthDate: DATA_ABSENT })).toEqual([]);
  });
});

describe('the defining url of a canonical resource is absolute', () => {
  const valueSet = (url: string, contained?: unknown[]) => ({
    resourceType: 'ValueSet',
    url,
    status: 'active',
    ...(contained ? { contained } : {}),
  });

  it('relative urls are refused, in contained resources too', () => {
    expect(errorsOf(valueSet('ValueSet/x'))).toEqual(['ValueSet.url [canonical-url-absolute]']);
    expect(errorsOf(valueSet('ValueSet/x'), 'stu3')).toContain('ValueSet.url [canonical-url-absolute]');
    const codeSystem = {
      resourceType: 'CodeSystem',
      id: 'c1',
      url: 'c1',
      status: 'active',
      content: 'complete',
    };
    const issues = validateResource('r4', {
      ...valueSet('http://a.org/vs', [codeSystem]),
      compose: { include: [{ system: 'http://a.org/cs', valueSet: ['#c1'] }] },
    });
    const contained = issues.find((i) => i.rule === 'canonical-url-absolute');
    expect(contained?.path).toBe('ValueSet.contained[0].url');
    expect(contained?.message).toContain('contained');
  });

  it('absolute urls and urns pass; a resource that is not canonical keeps its url as it is', () => {
    expect(errorsOf(valueSet('http://a.org/ValueSet/x'))).toEqual([]);
    expect(errorsOf(valueSet('urn:uuid:6b0e9b8e-2f1a-4c1e-9a55-3c5a0a7f0001'))).toEqual([]);
    const endpoint = {
      resourceType: 'Endpoint',
      status: 'active',
      connectionType: {
        system: 'http://terminology.hl7.org/CodeSystem/endpoint-connection-type',
        code: 'hl7-fhir-rest',
      },
      payloadType: [{ text: 'any' }],
      address: 'fhir/base',
    };
    expect(errorsOf(endpoint)).toEqual([]);
  });
});

describe('opd-3 as the reference corrects it (R4)', () => {
  const operation = (parameter: Record<string, unknown>) => ({
    resourceType: 'OperationDefinition',
    url: 'http://a.org/OperationDefinition/x',
    name: 'X',
    status: 'draft',
    kind: 'operation',
    code: 'x',
    system: false,
    type: true,
    instance: false,
    resource: ['Questionnaire'],
    parameter: [{ name: 'p', use: 'in', min: 0, max: '1', ...parameter }],
  });
  const targetProfile = ['http://a.org/StructureDefinition/p'];

  it('a parameter of a resource type may name target profiles', () => {
    expect(errorsOf(operation({ type: 'QuestionnaireResponse', targetProfile }))).toEqual([]);
    expect(errorsOf(operation({ type: 'Reference', targetProfile }))).toEqual([]);
  });

  it('a parameter of another data type may not', () => {
    expect(errorsOf(operation({ type: 'string', targetProfile }))).toEqual([
      'OperationDefinition.parameter[0] [opd-3]',
    ]);
    expect(errorsOf(operation({ type: 'string' }))).toEqual([]);
  });
});

describe('references between Bundle entries', () => {
  const observation = (versionId: string) => ({
    fullUrl: 'http://a.org/fhir/Observation/o1',
    resource: {
      resourceType: 'Observation',
      id: 'o1',
      meta: { versionId },
      status: 'final',
      code: { text: 'x' },
    },
  });
  const collection = (reference: string, ...others: unknown[]) => ({
    resourceType: 'Bundle',
    type: 'collection',
    entry: [
      {
        fullUrl: 'http://a.org/fhir/List/l1',
        resource: {
          resourceType: 'List',
          id: 'l1',
          status: 'current',
          mode: 'working',
          entry: [{ item: { reference } }],
        },
      },
      ...others,
    ],
  });

  it('a reference that matches two entries (one fullUrl, two versions) is refused', () => {
    expect(errorsOf(collection('Observation/o1', observation('1'), observation('2')))).toEqual([
      'Bundle.entry[0].resource.entry[0].item.reference [bundle-multiple-matches]',
    ]);
    expect(
      errorsOf(collection('http://a.org/fhir/Observation/o1', observation('1'), observation('2'))),
    ).toEqual(['Bundle.entry[0].resource.entry[0].item.reference [bundle-multiple-matches]']);
  });

  it('a versioned reference picks one; one entry per fullUrl is never ambiguous', () => {
    expect(errorsOf(collection('Observation/o1/_history/2', observation('1'), observation('2')))).toEqual([]);
    expect(errorsOf(collection('Observation/o1', observation('1')))).toEqual([]);
    // against another base the reference means another resource
    expect(errorsOf(collection('http://b.org/Observation/o1', observation('1'), observation('2')))).toEqual(
      [],
    );
  });
});

describe('the Bundle invariants of a transaction envelope', () => {
  const rules = (version: 'r4' | 'stu3' | 'dstu2', bundle: unknown) =>
    bundleInvariantIssues(version, bundle).map((i) => `${i.path} [${i.rule}]`);
  const create = {
    resource: { resourceType: 'Patient', gender: 'nope' },
    request: { method: 'POST', url: 'Patient' },
  };

  it('names each broken bdl rule, and leaves the entries to their own validation', () => {
    const transaction = { resourceType: 'Bundle', type: 'transaction', total: 1, entry: [create] };
    expect(rules('r4', transaction)).toEqual(['Bundle [bdl-1]']);
    expect(rules('stu3', transaction)).toEqual(['Bundle [bdl-1]']);
    expect(rules('dstu2', transaction)).toEqual(['Bundle [bdl-1]']);
    expect(rules('r4', { ...transaction, total: undefined })).toEqual([]);
  });

  it('DSTU2: a create without fullUrl passes, a fullUrl without a resource is bdl-6', () => {
    const remove = {
      fullUrl: 'http://a.org/fhir/Patient/1',
      request: { method: 'DELETE', url: 'Patient/1' },
    };
    expect(rules('dstu2', { resourceType: 'Bundle', type: 'batch', entry: [create] })).toEqual([]);
    expect(rules('dstu2', { resourceType: 'Bundle', type: 'batch', entry: [create, remove] })).toEqual([
      'Bundle.entry[1] [bdl-6]',
    ]);
  });
});

describe('a document before R4 has its date in meta.lastUpdated', () => {
  const document = (meta?: unknown) => ({
    resourceType: 'Bundle',
    type: 'document',
    ...(meta ? { meta } : {}),
    entry: [
      {
        fullUrl: 'urn:uuid:6b0e9b8e-2f1a-4c1e-9a55-3c5a0a7f0001',
        resource: { resourceType: 'Basic', code: { text: 'x' } },
      },
    ],
  });

  it('STU3 and DSTU2 refuse a document without it', () => {
    expect(errorsOf(document(), 'stu3')).toContain('Bundle.meta.lastUpdated [document-date]');
    expect(errorsOf(document(), 'dstu2')).toContain('Bundle.meta.lastUpdated [document-date]');
    const dated = document({ lastUpdated: '2020-01-01T00:00:00Z' });
    expect(errorsOf(dated, 'stu3')).not.toContain('Bundle.meta.lastUpdated [document-date]');
    expect(errorsOf(document(), 'r4')).not.toContain('Bundle.meta.lastUpdated [document-date]');
  });
});

describe('references in a history', () => {
  it('may match several versions of one resource (every version has its entry there)', () => {
    const version = (versionId: string) => ({
      fullUrl: 'http://a.org/fhir/Patient/p1',
      resource: { resourceType: 'Patient', id: 'p1', meta: { versionId } },
      request: { method: 'PUT', url: 'Patient/p1' },
      response: { status: '200' },
    });
    const observation = {
      fullUrl: 'http://a.org/fhir/Observation/o1',
      resource: {
        resourceType: 'Observation',
        id: 'o1',
        status: 'final',
        code: { text: 'x' },
        subject: { reference: 'Patient/p1' },
      },
      request: { method: 'POST', url: 'Observation' },
      response: { status: '201' },
    };
    const history = {
      resourceType: 'Bundle',
      type: 'history',
      entry: [observation, version('2'), version('1')],
    };
    expect(errorsOf(history)).toEqual([]);
    expect(
      errorsOf({
        ...history,
        type: 'collection',
        entry: history.entry.map(({ fullUrl, resource }) => ({ fullUrl, resource })),
      }),
    ).toEqual(['Bundle.entry[0].resource.subject.reference [bundle-multiple-matches]']);
  });
});
