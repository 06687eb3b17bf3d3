import { OperationOutcomeError } from '@app/fhir';
import type { Settings } from '../../config/settings';
import type { TenantContext } from '../../tenancy/tenant-context';
import type { KeyRange } from './key-ranges';
import type { ResourceKeyRef } from '../../storage/scoped-lookups';
import type { PurgeRepository } from './purge.repository';
import { PurgeService, remainingCount } from './purge.service';

/**
 * The batch loop's stop rules with an in-memory stand-in for the repository (the database side is
 * covered by test/purge.e2e-spec.ts): a disconnect stops after the batch in progress, and removal
 * order is current documents first, then their history.
 */
const ctx: TenantContext = { clientId: 'c1', userId: 7, scopes: ['user/*.*'], form: 'user-token' };
const request = { version: 'r4' as const, types: null, before: null, mode: 'delete' as const };

function fakeRepository(total: number, calls: string[], onBatch?: () => void): PurgeRepository {
  const current = new Map<string, ResourceKeyRef>();
  for (let i = 0; i < total; i++) {
    const key = `r4|c1|Observation|${i}`;
    current.set(key, { key, type: 'Observation', versions: 2 });
  }
  // history rows of the resources the range deletes remove (two versions each)
  const history: string[] = [];
  const inRange = (type: string, range: KeyRange) => {
    const refs = [...current.values()].filter(
      (ref) => ref.type === type && ref.key >= range.from && ref.key < range.to,
    );
    return refs;
  };
  const fake = {
    matchingKeys: async (_ctx: TenantContext, _selection: unknown, limit: number) => {
      calls.push('find');
      return [...current.values()].slice(0, limit);
    },
    removeCurrent: async (_ctx: TenantContext, _selection: unknown, refs: ResourceKeyRef[]) => {
      const keys = refs.map((ref) => ref.key);
      calls.push(`remove current ${keys.length}`);
      for (const key of keys) current.delete(key);
      return new Set(keys);
    },
    removeHistoryOf: async (_ctx: TenantContext, _version: unknown, refs: unknown[]) => {
      calls.push(`remove history ${refs.length}`);
      onBatch?.();
      return refs.length * 2;
    },
    typesOf: async () => {
      calls.push('types');
      return [...new Set([...current.values()].map((ref) => ref.type))].sort();
    },
    someKeyInRange: async (_ctx: TenantContext, _v: unknown, type: string, range: KeyRange) =>
      inRange(type, range)[0]?.key ?? null,
    removeCurrentInRange: async (_ctx: TenantContext, _v: unknown, type: string, range: KeyRange) => {
      const refs = inRange(type, range);
      calls.push(`remove current range ${refs.length}`);
      for (const ref of refs) {
        current.delete(ref.key);
        history.push(`${ref.key}|1`, `${ref.key}|2`);
      }
      onBatch?.();
      return refs.length;
    },
    keysInRange: async (_ctx: TenantContext, _v: unknown, type: string, range: KeyRange) =>
      inRange(type, range).map((ref) => ref.key),
    removeHistoryInRange: async (_ctx: TenantContext, _v: unknown, _range: KeyRange, except: string[]) => {
      calls.push(`remove history range except ${except.length}`);
      return history.splice(0).length;
    },
    historyRowsOlderThan: async () => [],
    anyHistoryRow: async () => false,
    countMatching: async () => current.size,
  };
  return fake as unknown as PurgeRepository;
}

function service(repository: PurgeRepository, budgetMs = 2000): PurgeService {
  return new PurgeService(repository, { purgeBudgetMs: budgetMs } as Settings);
}

describe('PurgeService batch loop', () => {
  it('removes current documents before their history, batch by batch, until done', async () => {
    const calls: string[] = [];
    const outcome = await service(fakeRepository(600, calls)).purge(ctx, request);
    // First batch: 1/8 per ms of the 2 s budget less the tenth kept back for the final count.
    expect(calls.slice(0, 3)).toEqual(['find', 'remove current 225', 'remove history 225']);
    // The first batch was full: the rest goes by key slices of each type, current documents first.
    expect(calls[3]).toBe('types');
    expect(calls[4]).toMatch(/^remove current range [1-9]/);
    expect(calls[5]).toBe('remove history range except 0');
    expect(outcome.issue[0].diagnostics).toContain('removed 600 resources and 1200 versions');
  });

  it('stops after the batch in progress when the client goes away, and says what is left', async () => {
    const calls: string[] = [];
    const abort = new AbortController();
    const repository = fakeRepository(600, calls, () => abort.abort());
    const error = await service(repository)
      .purge(ctx, request, abort.signal)
      .catch((err: unknown) => err);
    expect(error).toBeInstanceOf(OperationOutcomeError);
    expect((error as OperationOutcomeError).status).toBe(504);
    expect(calls).toEqual(['find', 'remove current 225', 'remove history 225']);
    expect((error as OperationOutcomeError).message).toContain('about 375 matching resources remain');
  });

  it('does not start when the client is already gone', async () => {
    const calls: string[] = [];
    const abort = new AbortController();
    abort.abort();
    await expect(service(fakeRepository(10, calls)).purge(ctx, request, abort.signal)).rejects.toThrow(
      /removed 0 resources/,
    );
    expect(calls).toEqual([]);
  });

  it('refuses a client-wide context: purge is per user', async () => {
    const calls: string[] = [];
    await expect(service(fakeRepository(1, calls)).purge({ ...ctx, userId: null }, request)).rejects.toThrow(
      /per user/,
    );
    expect(calls).toEqual([]);
  });
});

describe('remainingCount', () => {
  it('keeps a tenth of the budget (at most 2 s) for the final count, which may take 1 s at least', () => {
    expect(remainingCount(30_000)).toEqual({ reservedMs: 2000, timeoutMs: 2000 });
    expect(remainingCount(2000)).toEqual({ reservedMs: 200, timeoutMs: 1000 });
    expect(remainingCount(100)).toEqual({ reservedMs: 10, timeoutMs: 1000 });
  });
});
