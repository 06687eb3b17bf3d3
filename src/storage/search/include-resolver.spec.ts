import type { ResourceRepository, SizedRef } from '../resource.repository';
import type { TenantContext } from '../../tenancy/tenant-context';
import {
  includeDepthCappedEntry,
  IncludeResolver,
  includesTruncatedEntry,
  MAX_INCLUDE_DEPTH,
  MAX_INCLUDED,
} from './include-resolver';

const ctx: TenantContext = { clientId: 'c', userId: 1, scopes: [], form: 'user-token' };
const revinclude = (overrides: object = {}) => ({
  wildcard: false,
  sourceType: 'Observation',
  params: ['subject'],
  iterate: false,
  ...overrides,
});
const sized = (n: number, from = 0): SizedRef[] =>
  Array.from({ length: n }, (_, i) => ({
    _id: `r4|c|Observation|o${from + i}`,
    t: 'Observation',
    id: `o${from + i}`,
    lu: new Date(0),
    size: 100,
  }));

/** A resolver over a repository whose `sizesOf` answers `answer(filter)` and records each call. */
function resolverOver(answer: (filter: unknown) => SizedRef[]) {
  const calls: unknown[] = [];
  const repository = {
    sizesOf: (_ctx: unknown, _version: unknown, filter: unknown) => {
      calls.push(filter);
      return Promise.resolve(answer(filter));
    },
    findFields: () => Promise.resolve([]),
    key: (_ctx: unknown, version: string, type: string, id: string) => `${version}|c|${type}|${id}`,
  } as unknown as ResourceRepository;
  return { resolver: new IncludeResolver(repository), calls };
}

const matches = Array.from({ length: 250 }, (_, i) => ({
  _id: `r4|c|Patient|p${i}`,
  t: 'Patient',
  id: `p${i}`,
}));

describe('IncludeResolver', () => {
  it("_include asks for the targets' JSON within the page's budget; read looks up only those that came without it", async () => {
    const options: unknown[] = [];
    const looked: unknown[] = [];
    const repository = {
      findFields: () =>
        Promise.resolve([
          {
            _id: 'r4|c|Encounter|e1',
            t: 'Encounter',
            idx: { ref: ['subject|Patient/p1', 'subject|Patient/p2'] },
          },
        ]),
      sizesOf: (_c: unknown, _v: unknown, _f: unknown, limit: number, page: unknown) => {
        options.push({ limit, page });
        return Promise.resolve([
          {
            ...sized(1)[0],
            _id: 'r4|c|Patient|p1',
            t: 'Patient',
            id: 'p1',
            json: '{"resourceType":"Patient"}',
          },
          { ...sized(1)[0], _id: 'r4|c|Patient|p2', t: 'Patient', id: 'p2' },
        ]);
      },
      findByKeys: (_c: unknown, _v: unknown, refs: unknown[]) => {
        looked.push(...refs);
        return Promise.resolve([{ _id: 'r4|c|Patient|p2', v: 'r4', t: 'Patient', id: 'p2', json: '{}' }]);
      },
      key: (_ctx: unknown, version: string, type: string, id: string) => `${version}|c|${type}|${id}`,
    } as unknown as ResourceRepository;
    const resolver = new IncludeResolver(repository);
    const parsed = {
      include: [{ wildcard: false, sourceType: 'Encounter', params: ['subject'], iterate: false }],
      revinclude: [],
    };
    const sources = [{ _id: 'r4|c|Encounter|e1', t: 'Encounter', id: 'e1' }];
    const { additions } = await resolver.resolve(ctx, 'r4', parsed, sources, 'http://x', 5000);
    // two targets: each one's JSON inline when two of its size fit 5,000 bytes
    expect(options).toEqual([{ limit: 2, page: { jsonUpTo: 5000 } }]);
    const read = await resolver.read(ctx, 'r4', additions);
    expect(looked).toEqual([{ type: 'Patient', id: 'p2' }]);
    expect(read.map((doc) => [doc.id, doc.v, doc.json])).toEqual([
      ['p1', 'r4', '{"resourceType":"Patient"}'],
      ['p2', 'r4', '{}'],
    ]);
  });

  it('with :iterate the JSON comes with the first level only: one budget decoded however many levels', async () => {
    const pages: unknown[] = [];
    let level = 0;
    const repository = {
      // each source references one resource the levels before did not
      findFields: (_c: unknown, _v: unknown, filter: { _id: { $in: string[] } }) =>
        Promise.resolve(
          filter._id.$in.map((_id) => ({ _id, t: 'Patient', idx: { ref: [`link|Patient/p${level + 1}`] } })),
        ),
      sizesOf: (_c: unknown, _v: unknown, _f: unknown, _limit: number, page: unknown) => {
        pages.push(page);
        level++;
        return Promise.resolve([
          { ...sized(1)[0], _id: `r4|c|Patient|p${level}`, t: 'Patient', id: `p${level}` },
        ]);
      },
      key: (_ctx: unknown, version: string, type: string, id: string) => `${version}|c|${type}|${id}`,
    } as unknown as ResourceRepository;
    const parsed = {
      include: [{ wildcard: false, sourceType: 'Patient', params: ['link'], iterate: true }],
      revinclude: [],
    };
    await new IncludeResolver(repository).resolve(ctx, 'r4', parsed, matches.slice(0, 1), 'http://x', 5000);
    expect(pages.length).toBeGreaterThan(2);
    expect(pages[0]).toEqual({ jsonUpTo: 5000 });
    for (const page of pages.slice(1)) expect(page).toEqual({ jsonUpTo: undefined });
  });

  it('repeated directives collapse into one query', async () => {
    const { resolver, calls } = resolverOver(() => sized(3));
    const parsed = { include: [], revinclude: Array.from({ length: 60 }, () => revinclude()) };
    const { additions } = await resolver.resolve(ctx, 'r4', parsed, matches.slice(0, 5), 'http://x');
    expect(additions).toHaveLength(3);
    expect(calls).toHaveLength(1);
  });

  it('past MAX_INCLUDED additions: the first MAX_INCLUDED, marked truncated; the page says so in a warning', async () => {
    const { resolver } = resolverOver(() => sized(MAX_INCLUDED + 1));
    const { additions, truncated } = await resolver.resolve(
      ctx,
      'r4',
      { include: [], revinclude: [revinclude()] },
      matches.slice(0, 5),
      'http://x',
    );
    expect(additions).toHaveLength(MAX_INCLUDED);
    expect(truncated).toBe(true);
    const entry = includesTruncatedEntry();
    expect(entry.mode).toBe('outcome');
    expect(entry.resource).toMatchObject({
      resourceType: 'OperationOutcome',
      issue: [
        { severity: 'warning', code: 'too-costly', diagnostics: expect.stringMatching(/more than 1000/) },
      ],
    });
  });

  it('a wildcard _revinclude over 250 sources is three regex queries of at most 100 sources each', async () => {
    let next = 0;
    const { resolver, calls } = resolverOver(() => sized(1, next++));
    const { additions, truncated } = await resolver.resolve(
      ctx,
      'r4',
      { include: [], revinclude: [revinclude({ wildcard: true, sourceType: undefined, params: [] })] },
      matches,
      'http://x',
    );
    // each source twice (relative and absolute reference): 100, 100 and 50 sources
    const sources = calls.map((filter) => new Set(JSON.stringify(filter).match(/p\d+\b/g)).size);
    expect(sources).toEqual([100, 100, 50]);
    expect(additions).toHaveLength(3);
    expect(truncated).toBe(false);
  });

  describe(':iterate to a fixed point', () => {
    const iterating = {
      include: [],
      revinclude: [revinclude({ iterate: true, sourceType: undefined, wildcard: true, params: [] })],
    };

    it('follows level after level until one adds nothing new (beyond one iteration)', async () => {
      // a chain: each of MAX_INCLUDE_DEPTH levels finds one resource the levels before did not (one
      // iteration, the cap before, stopped after two), the next finds none new
      let level = 0;
      const { resolver, calls } = resolverOver(() =>
        ++level <= MAX_INCLUDE_DEPTH ? sized(1, level) : sized(1, 1),
      );
      const { additions, depthCapped } = await resolver.resolve(
        ctx,
        'r4',
        iterating,
        matches.slice(0, 1),
        'http://x',
      );
      expect(additions.map((ref) => ref.id)).toEqual(
        Array.from({ length: MAX_INCLUDE_DEPTH }, (_, i) => `o${i + 1}`),
      );
      expect(additions.length).toBeGreaterThan(2);
      expect(calls).toHaveLength(MAX_INCLUDE_DEPTH + 1);
      expect(depthCapped).toBe(false);
    });

    it('stops after MAX_INCLUDE_DEPTH levels and says so when a further level had more; the page warns', async () => {
      let level = 0;
      const { resolver, calls } = resolverOver(() => sized(1, level++));
      const { additions, depthCapped, truncated } = await resolver.resolve(
        ctx,
        'r4',
        iterating,
        matches.slice(0, 1),
        'http://x',
      );
      expect(additions).toHaveLength(MAX_INCLUDE_DEPTH);
      // the levels, and one more read only to tell that the cap left something out
      expect(calls).toHaveLength(MAX_INCLUDE_DEPTH + 1);
      expect(depthCapped).toBe(true);
      expect(truncated).toBe(false);
      expect(includeDepthCappedEntry().resource).toMatchObject({
        resourceType: 'OperationOutcome',
        issue: [
          { severity: 'warning', code: 'too-costly', diagnostics: expect.stringMatching(/3 levels deep/) },
        ],
      });
    });

    it('directives without :iterate read one level only', async () => {
      let level = 0;
      const { resolver, calls } = resolverOver(() => sized(1, level++));
      const { additions, depthCapped } = await resolver.resolve(
        ctx,
        'r4',
        { include: [], revinclude: [revinclude({ wildcard: true, sourceType: undefined, params: [] })] },
        matches.slice(0, 1),
        'http://x',
      );
      expect(additions).toHaveLength(1);
      expect(calls).toHaveLength(1);
      expect(depthCapped).toBe(false);
    });
  });
});
