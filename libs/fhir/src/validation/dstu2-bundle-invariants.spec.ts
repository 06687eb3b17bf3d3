import { dstu2BundleViolations } from './dstu2-bundle-invariants';

const keys = (bundle: Record<string, unknown>) =>
  dstu2BundleViolations(bundle).map((v) => `${v.key} ${v.path}`);
const patient = (id: string, versionId?: string) => ({
  resourceType: 'Patient',
  id,
  ...(versionId ? { meta: { versionId } } : {}),
});

describe('DSTU2 Bundle invariants bdl-1 … bdl-7', () => {
  it('a well-formed searchset, history and transaction-response break none', () => {
    expect(
      keys({
        type: 'searchset',
        total: 1,
        entry: [{ fullUrl: 'http://x/Patient/a', resource: patient('a'), search: { mode: 'match' } }],
      }),
    ).toEqual([]);
    expect(
      keys({
        type: 'history',
        total: 3,
        entry: [
          { request: { method: 'DELETE', url: 'Patient/a' } },
          {
            fullUrl: 'http://x/Patient/a',
            resource: patient('a', '2'),
            request: { method: 'PUT', url: 'Patient/a' },
          },
          {
            fullUrl: 'http://x/Patient/a',
            resource: patient('a', '1'),
            request: { method: 'POST', url: 'Patient' },
          },
        ],
      }),
    ).toEqual([]);
    expect(keys({ type: 'transaction-response', entry: [{ response: { status: '201 Created' } }] })).toEqual(
      [],
    );
  });

  it('bdl-1 … bdl-4: total, search, request and response only in their bundle types', () => {
    expect(keys({ type: 'transaction-response', total: 1 })).toEqual(['bdl-1 Bundle']);
    const entry = { fullUrl: 'urn:uuid:1', resource: patient('a') };
    expect(keys({ type: 'history', entry: [{ ...entry, search: { mode: 'match' }, request: {} }] })).toEqual([
      'bdl-2 Bundle',
    ]);
    expect(keys({ type: 'searchset', entry: [{ ...entry, request: { method: 'GET' } }] })).toEqual([
      'bdl-3 Bundle',
    ]);
    expect(
      keys({ type: 'history', entry: [{ ...entry, request: {}, response: { status: '200' } }] }),
    ).toEqual(['bdl-4 Bundle']);
  });

  it('bdl-5: an entry without resource needs a request or a response', () => {
    expect(keys({ type: 'collection', entry: [{ fullUrl: 'urn:uuid:1' }] })).toEqual([
      'bdl-5 Bundle.entry[0]',
      'bdl-6 Bundle.entry[0]',
    ]);
  });

  it('bdl-6: a fullUrl exactly when a resource is there', () => {
    expect(
      keys({ type: 'history', entry: [{ fullUrl: 'http://x/Patient/a', request: { method: 'DELETE' } }] }),
    ).toEqual(['bdl-6 Bundle.entry[0]']);
    expect(keys({ type: 'transaction-response', entry: [{ resource: patient('a'), response: {} }] })).toEqual(
      [
        'bdl-6 Bundle.entry[0]',
        // the XPath compares fullUrl values: an entry with a resource and none matches no entry
        'bdl-7 Bundle.entry[0]',
      ],
    );
  });

  it('bdl-7: one fullUrl twice only with different versionIds', () => {
    const twice = (a?: string, b?: string) =>
      keys({
        type: 'collection',
        entry: [
          { fullUrl: 'http://x/Patient/a', resource: patient('a', a) },
          { fullUrl: 'http://x/Patient/a', resource: patient('a', b) },
        ],
      });
    expect(twice('1', '2')).toEqual([]);
    expect(twice('1', '1')).toEqual(['bdl-7 Bundle.entry[0]', 'bdl-7 Bundle.entry[1]']);
    expect(twice()).toEqual(['bdl-7 Bundle.entry[0]', 'bdl-7 Bundle.entry[1]']);
  });
});
