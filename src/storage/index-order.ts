import type { mongo } from 'mongoose';
import { LAST_UPDATED_INDEX } from './indexes';

/**
 * Whether the engine reads a composite index in its key order, so that a sorted page stops after
 * its rows instead of sorting every match (docs/storage.md "Sorted pages"): MongoDB and DocumentDB
 * with the extended RUM (the default kit, 0.112) do; DocumentDB 0.108 and the distributed kit
 * (Citus on 0.108) sort every match. The one place that asks: ResourceStorage probes once at
 * start-up, and what depends on the answer (the newest-lastUpdated windows, which only add counts
 * where the index is read in order) reads `ResourceStorage.readsIndexesInOrder`.
 *
 * The probe explains a newest-first page on the lastUpdated index (named, as the searches name it)
 * of a tenant that has no documents: the plan is the engine's shape for that query whatever the
 * collection holds. No `SORT` stage and an index read → in order. An engine that cannot explain
 * (or answers in another shape) keeps the windows: they are correct on every engine.
 */
export async function probeIndexOrder(resources: mongo.Collection<any>): Promise<boolean> {
  try {
    const explain = await resources
      .aggregate(
        [
          { $match: { v: 'r4', c: '\u0000index-order-probe', t: 'Patient', del: false } },
          { $sort: { lu: -1, id: 1 } },
          { $limit: 2 },
        ],
        { hint: LAST_UPDATED_INDEX },
      )
      .explain('queryPlanner');
    const stages = planStages(explain);
    return stages.some((stage) => stage.includes('IXSCAN')) && !stages.includes('SORT');
  } catch {
    return false;
  }
}

/** The stage names of an explain's winning plan(s), rejected plans left out. */
function planStages(node: unknown, into: string[] = []): string[] {
  if (Array.isArray(node)) {
    for (const item of node) planStages(item, into);
    return into;
  }
  if (typeof node !== 'object' || node === null) return into;
  for (const [key, value] of Object.entries(node as Record<string, unknown>)) {
    if (key === 'rejectedPlans' || key === 'command') continue;
    if (key === 'stage' && typeof value === 'string') into.push(value);
    else planStages(value, into);
  }
  return into;
}
