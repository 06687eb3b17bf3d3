import { parseSearch } from '@app/fhir';
import type { TenantContext } from '../../tenancy/tenant-context';
import type { ResourceRepository, SearchPageRows } from '../resource.repository';
import { SearchExecutor } from './search-executor';
import { SubQueryResolver } from './sub-query-resolver';

const ctx: TenantContext = { clientId: 'c', userId: 1, scopes: [], form: 'user-token' };
const PAGE = { size: 10, maxBytes: 1_000_000 };

/** A repository whose page query answers `page` after `ms` (a busy engine), and counts 42. */
function repositoryAnswering(page: SearchPageRows, ms: number) {
  const countBy = jest.fn(async () => 42);
  const searchPage = jest.fn(() => new Promise<SearchPageRows>((done) => setTimeout(() => done(page), ms)));
  const searchPageCounted = jest.fn(async () => ({ ...page, counted: 7 }));
  const repository = { countBy, searchPage, searchPageCounted } as unknown as ResourceRepository;
  const settings = { searchCountBesideAfterMs: 15 };
  return {
    executor: new SearchExecutor(repository, new SubQueryResolver(repository), settings),
    countBy,
    searchPage,
    searchPageCounted,
  };
}

const parsed = (type: string, pairs: Array<[string, string]>) => parseSearch('r4', type, pairs);

/** An Observation search with a capped count (the default), its page full. */
async function capped(pairs: Array<[string, string]>) {
  const answering = repositoryAnswering({ docs: [], hasNext: true }, 0);
  const result = await answering.executor.searchPage(ctx, 'r4', parsed('Observation', pairs), {
    page: PAGE,
    count: { limit: 1001 },
  });
  return { result, ...answering };
}

describe('SearchExecutor.searchPage: when the count starts', () => {
  it("one reference's search with a capped count: the page and the count are one query", async () => {
    for (const [pairs, inIndexOrder] of [
      [[['patient', 'p1']], true],
      [
        [
          ['patient', 'p1'],
          ['_sort', '_lastUpdated'],
        ],
        true,
      ],
      [
        [
          ['patient', 'p1'],
          ['_sort', '-date'],
        ],
        false,
      ],
    ] as Array<[Array<[string, string]>, boolean]>) {
      const { result, countBy, searchPage, searchPageCounted } = await capped(pairs);
      expect(result.counted).toBe(7);
      expect(searchPageCounted).toHaveBeenCalledWith(ctx, 'r4', expect.anything(), PAGE, {
        limit: 1001,
        inIndexOrder,
      });
      expect(searchPage).not.toHaveBeenCalled();
      expect(countBy).not.toHaveBeenCalled();
    }
  });

  it("one token's search in the index's order with a capped count: one query while the page is within the cap", async () => {
    const code: [string, string] = ['code', 'http://loinc.org|8302-2'];
    for (const [pairs, counted] of [
      [[code], true],
      [[code, ['date', 'ge2019-01-01'], ['date', 'lt2020-01-01']], true],
      [[code, ['_sort', '_lastUpdated']], true],
      // no index holds a parameter's order: every match would be sorted and held by the one query
      [[code, ['_sort', '-date']], false],
      // two tokens: no one key bounds the scan
      [[['code', 'http://loinc.org|8302-2,http://loinc.org|8867-4']], false],
      // the page lies past the cap
      [[code, ['_skip', '995']], false],
    ] as Array<[Array<[string, string]>, boolean]>) {
      const { result, countBy, searchPage, searchPageCounted } = await capped(pairs);
      if (counted) {
        expect(result.counted).toBe(7);
        expect(searchPageCounted).toHaveBeenCalledWith(ctx, 'r4', expect.anything(), PAGE, {
          limit: 1001,
          inIndexOrder: true,
        });
        expect(searchPage).not.toHaveBeenCalled();
        expect(countBy).not.toHaveBeenCalled();
      } else {
        expect(result.counted).toBe(42);
        expect(searchPageCounted).not.toHaveBeenCalled();
        expect(searchPage).toHaveBeenCalledTimes(1);
        expect(countBy).toHaveBeenCalledTimes(1);
      }
    }
  });

  it("one reference's search whose first pages held every match: a plain page, until pages overflow", async () => {
    const allOnOnePage: SearchPageRows = { docs: [], hasNext: false, matchesFromSkip: 3 };
    const { executor, countBy, searchPage, searchPageCounted } = repositoryAnswering(allOnOnePage, 0);
    searchPageCounted.mockImplementation(async () => ({ ...allOnOnePage, counted: 3 }));
    const search = (patient: string, skip = 0) =>
      executor.searchPage(
        ctx,
        'r4',
        parsed('Condition', [
          ['patient', patient],
          ['_skip', String(skip)],
        ]),
        {
          page: PAGE,
          count: { limit: 1001 },
        },
      );
    // unknown shape: the counted page; it held every match, so the next patient's is a plain page
    await search('p1');
    expect(searchPageCounted).toHaveBeenCalledTimes(1);
    const plain = await search('p2');
    expect(plain.matchesFromSkip).toBe(3);
    expect(searchPage).toHaveBeenCalledTimes(1);
    expect(searchPageCounted).toHaveBeenCalledTimes(1);
    expect(countBy).not.toHaveBeenCalled();
    // a later page keeps the counted query
    await search('p2', 10);
    expect(searchPageCounted).toHaveBeenCalledTimes(2);
    // first pages that overflow (counted after them) turn the shape back to the counted page
    searchPage.mockImplementation(async () => ({ docs: [], hasNext: true }));
    let overflowing = 0;
    for (;;) {
      const result = await search('p3');
      if (searchPageCounted.mock.calls.length > 2) break;
      expect(result.counted).toBe(42);
      overflowing++;
    }
    expect(overflowing).toBeGreaterThan(1);
    expect(countBy).toHaveBeenCalledTimes(overflowing);
  });

  it("one token's search without a count (`_total=none`) is the page query alone", async () => {
    const { executor, countBy, searchPage, searchPageCounted } = repositoryAnswering(
      { docs: [], hasNext: true },
      0,
    );
    await executor.searchPage(ctx, 'r4', parsed('Observation', [['code', 'http://loinc.org|8302-2']]), {
      page: PAGE,
    });
    expect(searchPageCounted).not.toHaveBeenCalled();
    expect(searchPage).toHaveBeenCalledTimes(1);
    expect(countBy).not.toHaveBeenCalled();
  });

  it("one reference's search in a compartment keeps the page query and its own count", async () => {
    const { executor, searchPageCounted, countBy } = repositoryAnswering({ docs: [], hasNext: true }, 0);
    await executor.searchPage(ctx, 'r4', parsed('Condition', [['patient', 'p1']]), {
      page: PAGE,
      count: { limit: 1001 },
      within: { restriction: { 'idx.ref': 'patient|Patient/p1' } },
    });
    expect(searchPageCounted).not.toHaveBeenCalled();
    expect(countBy).toHaveBeenCalledTimes(1);
  });

  it("one reference's exact count: a slow page that saw its last match costs no count", async () => {
    const { executor, countBy } = repositoryAnswering({ docs: [], hasNext: false, matchesFromSkip: 3 }, 60);
    const result = await executor.searchPage(ctx, 'r4', parsed('Condition', [['patient', 'p1']]), {
      page: PAGE,
      count: {},
    });
    expect(result.matchesFromSkip).toBe(3);
    expect(countBy).not.toHaveBeenCalled();
  });

  it("one reference's exact count: a full page is counted after it", async () => {
    const { executor, countBy } = repositoryAnswering({ docs: [], hasNext: true }, 60);
    const result = await executor.searchPage(ctx, 'r4', parsed('Condition', [['patient', 'p1']]), {
      page: PAGE,
      count: {},
    });
    expect(result.counted).toBe(42);
    expect(countBy).toHaveBeenCalledTimes(1);
  });

  it('a search of many matches: the count starts beside a page query that runs long', async () => {
    const { executor, countBy } = repositoryAnswering({ docs: [], hasNext: false, matchesFromSkip: 3 }, 60);
    await executor.searchPage(ctx, 'r4', parsed('Observation', [['date', 'ge2019']]), {
      page: PAGE,
      count: { limit: 1001 },
    });
    // started at 15 ms, before the page answered; its answer is not needed
    expect(countBy).toHaveBeenCalledTimes(1);
  });

  it('a search of many matches beside another page query: its count waits for its page', async () => {
    const { executor, countBy } = repositoryAnswering({ docs: [], hasNext: false, matchesFromSkip: 3 }, 60);
    const search = () =>
      executor.searchPage(ctx, 'r4', parsed('Observation', [['date', 'ge2019']]), {
        page: PAGE,
        count: { limit: 1001 },
      });
    await Promise.all([search(), search()]);
    // both pages saw every match: no count was needed, none started
    expect(countBy).not.toHaveBeenCalled();
  });

  it('a search of many matches beside another page query: a full page is counted after it', async () => {
    const { executor, countBy } = repositoryAnswering({ docs: [], hasNext: true }, 60);
    const search = () =>
      executor.searchPage(ctx, 'r4', parsed('Observation', [['date', 'ge2019']]), {
        page: PAGE,
        count: { limit: 1001 },
      });
    const results = await Promise.all([search(), search()]);
    expect(results.map((result) => result.counted)).toEqual([42, 42]);
    expect(countBy).toHaveBeenCalledTimes(2);
  });

  it('a search of many matches whose page answers at once costs no count', async () => {
    const { executor, countBy } = repositoryAnswering({ docs: [], hasNext: false, matchesFromSkip: 3 }, 0);
    await executor.searchPage(ctx, 'r4', parsed('Observation', [['date', 'ge2019']]), {
      page: PAGE,
      count: { limit: 1001 },
    });
    expect(countBy).not.toHaveBeenCalled();
  });
});
