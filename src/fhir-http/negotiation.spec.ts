import type { Request } from 'express';
import { negotiateResponseFormat, OperationOutcomeError, type FhirVersion } from '@app/fhir';
import { REMEMBERED_ACCEPT_VALUES, responseContentType } from './negotiation';

/** A request with these headers and URL; its `query` is parsed from the URL, and counted. */
function requestFor(url: string, accept?: string): { req: Request; queryReads: () => number } {
  let reads = 0;
  const req = {
    url,
    headers: accept === undefined ? {} : { accept },
    get query() {
      reads++;
      return Object.fromEntries(new URLSearchParams(url.split('?')[1] ?? ''));
    },
  } as unknown as Request;
  return { req, queryReads: () => reads };
}

function answer(url: string, accept: string | undefined, version: FhirVersion): string {
  try {
    return responseContentType(requestFor(url, accept).req, version);
  } catch (e) {
    expect(e).toBeInstanceOf(OperationOutcomeError);
    return `406 ${(e as Error).message}`;
  }
}

function expected(accept: string | undefined, format: string | undefined, version: FhirVersion): string {
  const negotiated = negotiateResponseFormat(accept, format, version);
  return negotiated.ok ? negotiated.contentType : `406 ${negotiated.message}`;
}

const ACCEPTS = [
  undefined,
  'application/fhir+json',
  'application/json+fhir;q=1.0, application/json;q=0.9',
  '*/*',
  'application/xml',
  'text/html, application/xml;q=0.9',
  'application/fhir+xml;q=1, application/fhir+json;q=0.5',
];

describe('responseContentType', () => {
  it('answers each Accept as the negotiation does, per version, the first time and again', () => {
    for (let round = 0; round < 2; round++) {
      for (const version of ['r4', 'stu3', 'dstu2'] as const) {
        for (const accept of ACCEPTS) {
          expect(answer('/x/Patient/1', accept, version)).toBe(expected(accept, undefined, version));
        }
      }
    }
    // the same value answers differently in two versions: what is remembered is per version
    expect(answer('/x', '*/*', 'dstu2')).toBe('application/json+fhir');
    expect(answer('/x', '*/*', 'r4')).toBe('application/fhir+json');
  });

  it('lets `_format` win over a remembered Accept, and reads the query only when the URL has one', () => {
    const accept = 'application/fhir+json';
    expect(answer('/x', accept, 'r4')).toBe('application/fhir+json');
    expect(answer('/x?_format=xml', accept, 'r4')).toBe(expected(accept, 'xml', 'r4'));
    expect(answer('/x?_format=json', 'application/xml', 'r4')).toBe('application/fhir+json');
    const plain = requestFor('/r4/Patient/1', accept);
    responseContentType(plain.req, 'r4');
    expect(plain.queryReads()).toBe(0);
    const withQuery = requestFor('/r4/Patient/1?_elements=id', accept);
    responseContentType(withQuery.req, 'r4');
    expect(withQuery.queryReads()).toBe(1);
  });

  it('still answers right after more distinct values than it remembers', () => {
    for (let i = 0; i < REMEMBERED_ACCEPT_VALUES * 2 + 3; i++) {
      const accept = i % 2 === 0 ? `application/fhir+json;v=${i}` : `application/x-${i}`;
      expect(answer('/x', accept, 'stu3')).toBe(expected(accept, undefined, 'stu3'));
    }
    for (const accept of ACCEPTS)
      expect(answer('/x', accept, 'stu3')).toBe(expected(accept, undefined, 'stu3'));
  });
});
