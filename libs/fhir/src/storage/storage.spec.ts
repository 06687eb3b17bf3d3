import { validateResource } from '../validation/validate-resource';
import { entryIdSource, parseRequestUrl } from './bundle-entries';
import { pagingLinks, searchsetBundleJson, transactionResponseJson } from './bundle-builders';
import { buildCapabilityStatement } from './capability-statement';
import { isJsonContentType, negotiateResponseFormat } from './content-negotiation';
import { newResourceId, parseVersionEtag, provenanceIdFor, resourceKey, versionEtag } from './keys';
import { buildProvenance } from './provenance';
import { isPlaceholder, rewritePlaceholders } from './reference-rewriting';
import { deletedOutcome, stampResource } from './resource-stamping';

describe('keys', () => {
  it('provenance ids are deterministic per target version and valid FHIR ids', () => {
    const key = resourceKey('r4', 'c1', 'Patient', 'p1');
    expect(provenanceIdFor(key, 1)).toBe(provenanceIdFor(key, 1));
    expect(provenanceIdFor(key, 1)).not.toBe(provenanceIdFor(key, 2));
    expect(provenanceIdFor(key, 1)).toMatch(/^[A-Za-z0-9\-.]{1,64}$/);
    expect(newResourceId()).toMatch(/^[A-Za-z0-9\-.]{1,64}$/);
  });

  it('reads version ETags', () => {
    expect(parseVersionEtag(versionEtag(3))).toBe(3);
    expect(parseVersionEtag('"7"')).toBe(7);
    expect(parseVersionEtag('12')).toBe(12);
    expect(parseVersionEtag('W/"abc"')).toBeUndefined();
  });
});

describe('urn:uuid rewriting', () => {
  const a = 'urn:uuid:11111111-1111-4111-8111-111111111111';
  it('replaces placeholders at any depth, keeps _history suffixes, shares untouched parts', () => {
    const untouched = { text: 'x' };
    const input = {
      subject: { reference: a },
      extension: [{ url: 'http://e', valueReference: { reference: a } }],
      contained: [{ resourceType: 'Provenance', target: [{ reference: `${a}/_history/2` }] }],
      code: untouched,
      other: 'urn:uuid:22222222-2222-4222-8222-222222222222',
    };
    const out = rewritePlaceholders(input, new Map([[a, 'Patient/p1']]));
    expect(out.subject.reference).toBe('Patient/p1');
    expect(out.extension[0].valueReference.reference).toBe('Patient/p1');
    expect(out.contained[0].target[0].reference).toBe('Patient/p1/_history/2');
    expect(out.code).toBe(untouched);
    expect(out.other).toBe(input.other);
    expect(input.subject.reference).toBe(a);
  });

  it('recognises urn:uuid and urn:oid placeholders only', () => {
    expect(isPlaceholder(a)).toBe(true);
    expect(isPlaceholder('urn:oid:1.2.3')).toBe(true);
    expect(isPlaceholder('urn:uuid:not-a-uuid')).toBe(false);
    expect(isPlaceholder('Patient/1')).toBe(false);
  });
});

describe('bundle entries', () => {
  it('parses request URLs', () => {
    expect(parseRequestUrl('Patient')).toEqual({ type: 'Patient' });
    expect(parseRequestUrl('Patient/1')).toEqual({ type: 'Patient', id: '1' });
    expect(parseRequestUrl('Patient/1/_history/2')).toEqual({ type: 'Patient', id: '1', versionId: '2' });
    expect(parseRequestUrl('Patient?name=x&_count=2')).toEqual({ type: 'Patient', query: 'name=x&_count=2' });
    expect(parseRequestUrl('http://h/fhir/r4/Patient/9')).toEqual({ type: 'Patient', id: '9' });
    expect(parseRequestUrl('patient/1')).toBeUndefined();
  });

  it('takes the id from resource.id, then fullUrl, else assigns one (docs/api.md §5)', () => {
    expect(entryIdSource('Patient', undefined, 'a')).toEqual({ kind: 'chosen', id: 'a' });
    expect(entryIdSource('Patient', 'http://x/Patient/b', undefined)).toEqual({ kind: 'chosen', id: 'b' });
    expect(entryIdSource('Patient', 'urn:uuid:11111111-1111-4111-8111-111111111111', undefined)).toEqual({
      kind: 'assigned',
      placeholder: 'urn:uuid:11111111-1111-4111-8111-111111111111',
    });
    expect(entryIdSource('Patient', undefined, undefined)).toEqual({ kind: 'assigned' });
    expect(entryIdSource('Patient', undefined, 'bad id').kind).toBe('invalid');
    expect(entryIdSource('Patient', 'http://x/Observation/b', undefined).kind).toBe('invalid');
  });
});

describe('response builders', () => {
  it('builds a searchset from stored JSON text without re-serialising it', () => {
    const json = searchsetBundleJson({
      total: 1,
      entries: [{ fullUrl: 'http://h/r4/Patient/1', resourceJson: '{"resourceType":"Patient","id":"1"}' }],
    });
    const bundle = JSON.parse(json);
    expect(bundle).toMatchObject({ resourceType: 'Bundle', type: 'searchset', total: 1 });
    expect(bundle.entry[0]).toEqual({
      fullUrl: 'http://h/r4/Patient/1',
      resource: { resourceType: 'Patient', id: '1' },
      search: { mode: 'match' },
    });
    const response = JSON.parse(
      transactionResponseJson('r4', 'batch-response', [{ response: { status: '200 OK' } }]),
    );
    expect(response.type).toBe('batch-response');
  });

  it('paging links: first page, middle page, last page', () => {
    const rel = (skip: number) =>
      Object.fromEntries(
        pagingLinks('http://h/r4/Patient', [['name', 'a b']], { skip, count: 10, total: 25 }).map((l) => [
          l.relation,
          l.url,
        ]),
      );
    expect(rel(0).next).toBe('http://h/r4/Patient?name=a+b&_count=10&_skip=10');
    expect(rel(0).previous).toBeUndefined();
    expect(rel(10).previous).toBe('http://h/r4/Patient?name=a+b&_count=10&_skip=0');
    expect(rel(20).next).toBeUndefined();
    expect(rel(20).last).toBe('http://h/r4/Patient?name=a+b&_count=10&_skip=20');
  });

  it('stamps meta and keeps the client meta elements', () => {
    const at = new Date('2024-01-02T03:04:05.006Z');
    const out = stampResource(
      { resourceType: 'Patient', meta: { versionId: '9', tag: [{ code: 't' }] }, gender: 'x' },
      'p',
      2,
      at,
    );
    expect(Object.keys(out).slice(0, 3)).toEqual(['resourceType', 'id', 'meta']);
    expect(out.meta).toEqual({
      tag: [{ code: 't' }],
      versionId: '2',
      lastUpdated: '2024-01-02T03:04:05.006Z',
    });
    expect(deletedOutcome('Patient', 'p', 3).issue[0]).toMatchObject({
      severity: 'information',
      code: 'value',
    });
  });
});

describe('content negotiation', () => {
  it('answers JSON, refuses XML', () => {
    expect(negotiateResponseFormat(undefined, undefined)).toEqual({
      ok: true,
      contentType: 'application/fhir+json',
    });
    expect(negotiateResponseFormat('application/json', undefined)).toEqual({
      ok: true,
      contentType: 'application/json',
    });
    expect(negotiateResponseFormat('application/fhir+xml;q=0.9, */*;q=0.1', undefined).ok).toBe(true);
    expect(negotiateResponseFormat('application/fhir+xml', undefined).ok).toBe(false);
    expect(negotiateResponseFormat(undefined, 'xml').ok).toBe(false);
    expect(negotiateResponseFormat('application/fhir+xml', 'json').ok).toBe(true);
    expect(isJsonContentType('application/fhir+json; charset=utf-8')).toBe(true);
    expect(isJsonContentType('application/xml')).toBe(false);
    expect(isJsonContentType(undefined)).toBe(false);
  });

  it('answers each version in its own FHIR JSON type, and the other spelling when asked by name', () => {
    const type = (version: 'r4' | 'stu3' | 'dstu2', accept?: string, format?: string) => {
      const result = negotiateResponseFormat(accept, format, version);
      return result.ok ? result.contentType : 'refused';
    };
    expect(type('dstu2')).toBe('application/json+fhir');
    expect(type('dstu2', '*/*')).toBe('application/json+fhir');
    expect(type('dstu2', undefined, 'json')).toBe('application/json+fhir');
    // HAPI's DSTU2 client
    expect(type('dstu2', 'application/json+fhir;q=1.0, application/json;q=0.9')).toBe(
      'application/json+fhir',
    );
    expect(type('dstu2', 'application/fhir+json')).toBe('application/fhir+json');
    expect(type('stu3')).toBe('application/fhir+json');
    expect(type('stu3', 'application/json+fhir')).toBe('application/json+fhir');
    expect(type('stu3', undefined, 'application/json+fhir')).toBe('application/json+fhir');
    expect(type('r4', 'application/json+fhir')).toBe('application/fhir+json');
    expect(type('dstu2', 'application/xml+fhir')).toBe('refused');
    expect(type('dstu2', undefined, 'xml')).toBe('refused');
    expect(isJsonContentType('application/json+fhir;charset=UTF-8')).toBe(true);
  });
});

describe('Provenance and CapabilityStatement shapes validate against their version', () => {
  for (const version of ['r4', 'stu3', 'dstu2'] as const) {
    it(`${version} Provenance, of one write and of a bundle's`, () => {
      for (const targets of [
        ['Patient/a/_history/1'],
        ['Patient/a/_history/1', 'Observation/b/_history/3'],
      ]) {
        const provenance = buildProvenance({
          version,
          id: 'p1',
          targets,
          recorded: '2024-01-01T00:00:00.000Z',
          activity: 'create',
          clientId: 'client-1',
        });
        expect(provenance.target).toEqual(targets.map((reference) => ({ reference })));
        expect(validateResource(version, provenance, 'Provenance')).toEqual([]);
      }
    });
  }

  it('R4 CapabilityStatement', () => {
    const statement = buildCapabilityStatement({
      version: 'r4',
      baseUrl: 'http://h/r4',
      software: { name: 's', version: '1' },
      resourceTypes: ['Patient'],
      typeInteractions: ['read', 'create'],
      systemInteractions: ['transaction'],
      searchParams: () => [{ name: '_id', type: 'token' }],
      operations: [
        {
          name: 'everything',
          definition: 'http://hl7.org/fhir/OperationDefinition/Patient-everything',
          types: ['Patient'],
        },
      ],
      date: '2024-01-01T00:00:00Z',
    });
    expect(validateResource('r4', statement, 'CapabilityStatement')).toEqual([]);
  });
});
