import type { mongo } from 'mongoose';
import { bringStoreLayoutUpToDate } from './store-layout';
import type { IndexSettings } from './search-indexing';

/** A store whose layout facts are all missing, recording the scans the passes send. */
function recordingStore() {
  const finds: Array<{ filter: Record<string, unknown>; options: Record<string, unknown> }> = [];
  const facts: string[] = [];
  const resources = {
    find: (filter: Record<string, unknown>, options: Record<string, unknown>) => {
      finds.push({ filter, options });
      return (async function* () {})();
    },
    bulkWrite: async () => undefined,
  } as unknown as mongo.Collection<any>;
  const layout = {
    findOne: async () => null,
    updateOne: async (filter: { _id: string }) => void facts.push(filter._id),
  };
  const db = { collection: () => layout } as unknown as mongo.Db;
  return { db, resources, finds, facts };
}

describe('start-up layout passes', () => {
  const settings = { fullText: true, urls: { base: 'http://fhir.test' } } as IndexSettings;

  it('scan the whole store with a deadline per batch, not one for the scan (it outlives DB_TIMEOUT_MS)', async () => {
    const store = recordingStore();
    await bringStoreLayoutUpToDate(store.db, store.resources, settings);
    expect(store.finds).toHaveLength(2);
    for (const { options } of store.finds) expect(options.timeoutMode).toBe('iteration');
    expect(store.facts).toEqual(['local-references', 'patient-compartments']);
  });

  it('leave out the documents that already hold a compartment entry (an update can bring one up again)', async () => {
    const store = recordingStore();
    await bringStoreLayoutUpToDate(store.db, store.resources, settings);
    const [patterns] = store.finds
      .map(
        ({ filter }) => filter.$and as Array<{ 'idx.ref': { $regex?: string; $not?: RegExp } }> | undefined,
      )
      .filter((and) => and !== undefined);
    const needs = new RegExp(patterns[0]['idx.ref'].$regex!);
    const done = patterns[1]['idx.ref'].$not!;
    expect(needs.test('subject|Patient/p1')).toBe(true);
    expect(needs.test('*patient|Patient/p1')).toBe(false);
    expect(done.test('*patient|Patient/p1')).toBe(true);
    expect(done.test('subject|Patient/p1')).toBe(false);
  });
});
