import { Logger } from '@nestjs/common';
import type { mongo } from 'mongoose';
import { extractIndex } from '@app/fhir/search/index-extraction';
import { escapeRegex } from '@app/fhir/search/text-normalization';
import type { ResourceDoc } from './documents';
import { indexOptions, type IndexSettings } from './search-indexing';

/** Small unsharded collection of facts about the stored layout (one document per fact). */
export const STORE_LAYOUT_COLLECTION = 'store_layout';

/** The fact: every current document's references to `base` are stored relative. */
const LOCAL_REFERENCES = 'local-references';

interface LayoutDoc {
  _id: string;
  base: string;
}

const BATCH = 500;

const logger = new Logger('LocalReferences');

/**
 * References to this server's own base are stored relative (`patient|Patient/1`, never
 * `patient|{base}/r4/Patient/1`: the index extraction's `serviceBase`), so that a reference search
 * is one equality the references index reads in lastUpdated order. Documents written before that
 * rule, or under another base URL, may still hold the absolute form: their index is extracted
 * again here, once per store and base, before the first request (a scan of every document, whose
 * `idx.ref` no index bounds by a pattern). Done, the store records the base (`store_layout`), so
 * later starts read one document; a start killed midway does the pass again (each update is
 * idempotent, compare-and-set on `vid` like `store reindex`).
 */
export async function storeLocalReferencesRelative(
  db: mongo.Db,
  resources: mongo.Collection<ResourceDoc>,
  settings: IndexSettings,
): Promise<void> {
  const layout = db.collection<LayoutDoc>(STORE_LAYOUT_COLLECTION);
  const base = settings.urls.base;
  const done = await layout.findOne({ _id: LOCAL_REFERENCES });
  if (done?.base === base) return;
  const absolute = { 'idx.ref': { $regex: `^[^|]*\\|${escapeRegex(`${base}/`)}` } };
  const options = indexOptions(settings);
  const cursor = resources.find(absolute, { projection: { _id: 1, c: 1, u: 1, v: 1, vid: 1, json: 1 } });
  let updates: mongo.AnyBulkWriteOperation<ResourceDoc>[] = [];
  let rewritten = 0;
  const flush = async () => {
    if (updates.length > 0) await resources.bulkWrite(updates, { ordered: false });
    rewritten += updates.length;
    updates = [];
  };
  for await (const doc of cursor) {
    if (typeof doc.json !== 'string') continue;
    const resource = JSON.parse(doc.json) as Record<string, unknown>;
    const idx = extractIndex(doc.v, resource, options);
    updates.push({
      updateOne: { filter: { _id: doc._id, c: doc.c, u: doc.u, vid: doc.vid }, update: { $set: { idx } } },
    });
    if (updates.length >= BATCH) {
      await flush();
      logger.log(`references to ${base} made relative: ${rewritten} documents so far`);
    }
  }
  await flush();
  if (rewritten > 0) logger.log(`references to ${base} made relative in ${rewritten} documents`);
  await layout.updateOne({ _id: LOCAL_REFERENCES }, { $set: { base } }, { upsert: true });
}
