import { bundleIntegrityProblems, type IntegrityEntry } from './bundle-integrity';

const uuid = (n: number) => `urn:uuid:00000000-0000-4000-8000-${String(n).padStart(12, '0')}`;
const post = (index: number, resource: Record<string, unknown>, fullUrl?: string): IntegrityEntry => ({
  index,
  method: 'POST',
  url: String(resource.resourceType),
  fullUrl,
  resource,
});

describe('bundleIntegrityProblems', () => {
  it('accepts distinct entries with resolvable placeholders', () => {
    expect(
      bundleIntegrityProblems([
        post(0, { resourceType: 'Patient' }, uuid(1)),
        post(1, { resourceType: 'Observation', subject: { reference: uuid(1) } }, uuid(2)),
        post(2, { resourceType: 'Observation', hasMember: [{ reference: `${uuid(2)}/_history/1` }] }),
        { index: 3, method: 'GET', url: 'Patient/a' },
        { index: 4, method: 'GET', url: 'Patient/a' },
      ]),
    ).toEqual([]);
  });

  it('refuses a fullUrl used twice', () => {
    const problems = bundleIntegrityProblems([
      post(0, { resourceType: 'Patient' }, uuid(1)),
      post(1, { resourceType: 'Patient' }, uuid(1)),
    ]);
    expect(problems).toEqual([
      { path: 'Bundle.entry[1].fullUrl', message: expect.stringMatching(/entry\[0\]/) },
    ]);
  });

  it('refuses two writes of one resource: PUT+PUT, PUT+DELETE, POST with a chosen id + PUT', () => {
    const put = (index: number, id: string): IntegrityEntry => ({
      index,
      method: 'PUT',
      url: `Patient/${id}`,
      resource: { resourceType: 'Patient', id },
    });
    expect(bundleIntegrityProblems([put(0, 'a'), put(1, 'a')])).toHaveLength(1);
    expect(
      bundleIntegrityProblems([put(0, 'a'), { index: 1, method: 'DELETE', url: 'Patient/a' }]),
    ).toHaveLength(1);
    expect(
      bundleIntegrityProblems([post(0, { resourceType: 'Patient', id: 'a' }), put(1, 'a')]),
    ).toHaveLength(1);
    expect(
      bundleIntegrityProblems([
        post(0, { resourceType: 'Patient' }, 'http://x.org/fhir/Patient/a'),
        put(1, 'a'),
      ]),
    ).toHaveLength(1);
    // other types, other ids, conditional urls and server-assigned ids are no overlap
    expect(
      bundleIntegrityProblems([
        put(0, 'a'),
        put(1, 'b'),
        { index: 2, method: 'PUT', url: 'Observation/a', resource: { resourceType: 'Observation' } },
        { index: 3, method: 'PUT', url: 'Patient?identifier=x', resource: { resourceType: 'Patient' } },
        post(4, { resourceType: 'Patient' }),
        post(5, { resourceType: 'Patient' }),
      ]),
    ).toEqual([]);
  });

  it('refuses a placeholder reference naming no POST/PUT entry, at any depth, malformed ones too', () => {
    const problems = bundleIntegrityProblems([
      post(0, { resourceType: 'Patient' }, uuid(1)),
      { index: 1, method: 'GET', url: 'Patient/x', fullUrl: uuid(3) },
      post(1, {
        resourceType: 'Observation',
        subject: { reference: uuid(2) },
        contained: [{ resourceType: 'Provenance', target: [{ reference: uuid(3) }] }],
        focus: [{ reference: 'urn:uuid:not-a-uuid' }],
        performer: [{ reference: uuid(1) }],
        // identifiers and uris may hold urn:uuid values: they are data, not references
        identifier: [{ system: 'urn:ietf:rfc:3986', value: uuid(9) }],
      }),
    ]);
    expect(problems.map((p) => p.message)).toEqual([
      expect.stringContaining(uuid(2)),
      expect.stringContaining(uuid(3)),
      expect.stringContaining('urn:uuid:not-a-uuid'),
    ]);
  });
});
