import { validateResource } from './validate-resource';

/** Rules the reference validator applies beyond the invariants: searchset entries, Attachment.size. */
function errorsOf(resource: unknown): string[] {
  return validateResource('r4', resource)
    .filter((i) => i.severity === 'error')
    .map((i) => `${i.path} ${i.message}`);
}

const searchset = (self: string | undefined, entry: unknown[]) => ({
  resourceType: 'Bundle',
  type: 'searchset',
  ...(self ? { link: [{ relation: 'self', url: self }] } : {}),
  entry,
});
const immunization = (id?: string) => ({
  resourceType: 'Immunization',
  ...(id ? { id } : {}),
  status: 'completed',
  vaccineCode: { text: 'x' },
  patient: { reference: 'Patient/1' },
  occurrenceDateTime: '2021-01-01',
});

describe('searchset entries are what their search mode says', () => {
  it('a match has an id and is of the type the self link searched', () => {
    const entry = (resource: unknown) => ({ fullUrl: 'http://a.org/x', resource, search: { mode: 'match' } });
    expect(errorsOf(searchset('http://a.org/Patient?name=x', [entry(immunization())]))).toEqual([
      'Bundle.entry[0].resource Search results must have ids',
      'Bundle.entry[0].resource This is not a matching resource type for the specified search (Immunization expecting [Patient])',
    ]);
    expect(
      errorsOf(searchset('http://a.org?_type=Observation,Immunization', [entry(immunization('i1'))])),
    ).toEqual([]);
    expect(errorsOf(searchset('http://a.org/Immunization?_count=1', [entry(immunization('i1'))]))).toEqual(
      [],
    );
    // a self link that names no type (compartment `*`, an operation) says nothing of the types
    expect(errorsOf(searchset('http://a.org/Patient/1/*', [entry(immunization('i1'))]))).toEqual([]);
    expect(errorsOf(searchset('http://a.org/Patient/1/$everything', [entry(immunization('i1'))]))).toEqual(
      [],
    );
  });

  it('an outcome is an OperationOutcome; entries without a mode are left alone', () => {
    const outcome = {
      resourceType: 'OperationOutcome',
      issue: [{ severity: 'warning', code: 'processing' }],
    };
    expect(
      errorsOf(
        searchset(undefined, [
          { fullUrl: 'http://a.org/x', resource: immunization('i1'), search: { mode: 'outcome' } },
        ]),
      ),
    ).toEqual(['Bundle.entry[0].resource This is not an OperationOutcome (Immunization)']);
    expect(
      errorsOf(
        searchset(undefined, [
          {
            fullUrl: 'urn:uuid:0c3b5b8e-7e0e-4f52-9a57-2d3b1f0e6a11',
            resource: outcome,
            search: { mode: 'outcome' },
          },
        ]),
      ),
    ).toEqual([]);
    expect(errorsOf(searchset(undefined, [{ fullUrl: 'http://a.org/x', resource: outcome }]))).toEqual([]);
  });
});

describe('Attachment.size', () => {
  const media = (content: Record<string, unknown>) => ({
    resourceType: 'Media',
    status: 'completed',
    content,
  });
  it('must be the decoded length of inline data', () => {
    // "help i'm a bug" is 14 bytes
    expect(errorsOf(media({ contentType: 'text/plain', data: 'aGVscCBpJ20gYSBidWc=', size: 100 }))).toEqual([
      'Media.content.size Stated Attachment Size 100 does not match actual attachment size 14',
    ]);
    expect(errorsOf(media({ contentType: 'text/plain', data: 'aGVscCBpJ20gYSBidWc=', size: 14 }))).toEqual(
      [],
    );
    // with the content elsewhere (url), the size is not checkable here
    expect(errorsOf(media({ contentType: 'text/plain', url: 'http://a.org/f', size: 100 }))).toEqual([]);
  });
});
