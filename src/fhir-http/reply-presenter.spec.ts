import { presentReply, returnPreference } from './reply-presenter';
import type { StoredVersion } from './results';

const BASE = 'https://fhir.example';
const doc: StoredVersion = {
  t: 'Patient',
  id: 'p1',
  vid: 3,
  lu: new Date('2026-01-02T03:04:05.000Z'),
  json: '{"resourceType":"Patient","id":"p1"}',
};
const versionHeaders = { ETag: 'W/"3"', 'Last-Modified': 'Fri, 02 Jan 2026 03:04:05 GMT' };

describe('presentReply', () => {
  it('answers a create with 201, the stored JSON, Location, ETag and Last-Modified', () => {
    expect(presentReply({ kind: 'written', doc, created: true }, 'r4', BASE, undefined)).toEqual({
      status: 201,
      body: doc.json,
      headers: { Location: `${BASE}/r4/Patient/p1/_history/3`, ...versionHeaders },
    });
  });

  it('shapes a write by Prefer: return=minimal and return=OperationOutcome, headers kept', () => {
    const minimal = presentReply({ kind: 'written', doc, created: false }, 'stu3', BASE, 'return=minimal');
    expect(minimal).toMatchObject({
      status: 200,
      body: '',
      headers: { Location: `${BASE}/stu3/Patient/p1/_history/3` },
    });
    const outcome = presentReply(
      { kind: 'written', doc, created: false },
      'r4',
      BASE,
      'return=OperationOutcome',
    );
    expect(JSON.stringify(outcome.body)).toContain('Patient/p1 updated: version 3');
  });

  it('answers a matched conditional create with 200 and says nothing was created', () => {
    const reply = presentReply({ kind: 'matched', doc }, 'r4', BASE, 'return=OperationOutcome');
    expect(reply.status).toBe(200);
    expect(JSON.stringify(reply.body)).toContain(
      'Patient/p1 (version 3) already exists: nothing was created',
    );
    expect(presentReply({ kind: 'matched', doc }, 'r4', BASE, undefined).body).toBe(doc.json);
  });

  it('answers a read with the JSON untouched and the version headers, a 304 with the ETag only', () => {
    expect(presentReply({ kind: 'found', doc }, 'r4', BASE, 'return=minimal')).toEqual({
      status: 200,
      body: doc.json,
      headers: versionHeaders,
    });
    expect(presentReply({ kind: 'not-modified', doc }, 'r4', BASE, undefined)).toEqual({
      status: 304,
      body: '',
      headers: versionHeaders,
    });
  });

  it('answers a delete with the deleted outcome; the ETag names the tombstone, not a removed version', () => {
    const resource = presentReply(
      { kind: 'removed', type: 'Patient', id: 'p1', vid: 4, of: 'resource' },
      'r4',
      BASE,
      undefined,
    );
    expect(resource.headers).toEqual({ ETag: 'W/"4"' });
    expect(JSON.stringify(resource.body)).toContain('Resource Patient/p1 with version 4 has been deleted.');
    const version = presentReply(
      { kind: 'removed', type: 'Patient', id: 'p1', vid: 2, of: 'version' },
      'r4',
      BASE,
      undefined,
    );
    expect(version.headers).toBeUndefined();
  });

  it('answers pages, operation output and asynchronous work', () => {
    expect(presentReply({ kind: 'page', json: '{}' }, 'r4', BASE, undefined)).toEqual({
      status: 200,
      body: '{}',
    });
    const expires = new Date('2026-01-02T00:00:00.000Z');
    expect(
      presentReply(
        { kind: 'output', body: { a: 1 }, mediaType: 'application/json', expires },
        'r4',
        BASE,
        undefined,
      ),
    ).toEqual({
      status: 200,
      body: { a: 1 },
      mediaType: 'application/json',
      headers: { Expires: expires.toUTCString() },
    });
    const outcome = { resourceType: 'OperationOutcome' as const, issue: [] };
    expect(presentReply({ kind: 'accepted', statusUrl: 'u', outcome }, 'r4', BASE, undefined)).toEqual({
      status: 202,
      body: outcome,
      headers: { 'Content-Location': 'u' },
    });
    expect(
      presentReply({ kind: 'in-progress', progress: '50%', retryAfterSeconds: 2 }, 'r4', BASE, undefined),
    ).toEqual({
      status: 202,
      body: '',
      headers: { 'X-Progress': '50%', 'Retry-After': '2' },
    });
  });
});

describe('returnPreference', () => {
  it('reads return= among other preferences, representation by default', () => {
    expect(returnPreference('handling=lenient, return=minimal')).toBe('minimal');
    expect(returnPreference('return="OperationOutcome"')).toBe('OperationOutcome');
    expect(returnPreference(undefined)).toBe('representation');
    expect(returnPreference('return=bogus')).toBe('representation');
  });
});
