import { Logger } from '@nestjs/common';
import type { mongo } from 'mongoose';
import { extractIndex } from '@app/fhir/search/index-extraction';
import {
  ANY_PATIENT_COMPARTMENT_PATTERN,
  PATIENT_COMPARTMENT_CODE,
} from '@app/fhir/search/patient-compartment-key';
import { escapeRegex } from '@app/fhir/search/text-normalization';
import { LONG_CURSOR } from '../database/ensure-indexes';
import type { ResourceDoc } from './documents';
import { indexOptions, type IndexSettings } from './search-indexing';

/**
 * Passes that bring documents written by an earlier release to today's search entries, each once per
 * store: the entries of the documents a filter selects are extracted again, then the store records
 * the fact (`store_layout`), so later starts read one document. They run at start-up, before the
 * first request. A start killed midway does the pass again (each update is idempotent,
 * compare-and-set on `vid` like `store reindex`).
 */

/** Small unsharded collection of facts about the stored layout (one document per fact). */
export const STORE_LAYOUT_COLLECTION = 'store_layout';

interface LayoutDoc {
  _id: string;
  value: string;
  /** The first fact's value before it was named `value`. */
  base?: string;
}

const BATCH = 500;

const logger = new Logger('StoreLayout');

/** A fact about every current document, and the documents that may not hold it yet. */
interface LayoutFact {
  name: string;
  /** The fact holds for this value (a base URL …): another value means another pass. */
  value: string;
  /** Documents whose entries are extracted again. */
  filter: mongo.Filter<ResourceDoc>;
  /** What was done, for the log. */
  describe: string;
}

/**
 * The layout facts of this release, in order, each brought about once per store:
 * - references to this server's own base are stored relative (`patient|Patient/1`, never
 *   `patient|{base}/r4/Patient/1`: the extraction's `serviceBase`), so that a reference search is
 *   one equality the references index reads in lastUpdated order (per base URL: another base
 *   means another pass);
 * - a resource in a Patient compartment holds `*patient|Patient/x` (patient-compartment-key.ts), so
 *   that `$everything` reads the compartment in one ordered scan: every document with a reference
 *   entry to a Patient and no compartment entry is extracted again (those in no compartment gain
 *   nothing and lose nothing).
 * Neither filter is bounded by an index (a pattern over `idx.ref`): a scan of every document, once,
 * which outlives DB_TIMEOUT_MS (the cursor's deadline holds per batch). An update can move a
 * document ahead of the scan on DocumentDB, which then reads it again: the filters leave out what is
 * done.
 */
export async function bringStoreLayoutUpToDate(
  db: mongo.Db,
  resources: mongo.Collection<ResourceDoc>,
  settings: IndexSettings,
): Promise<void> {
  const base = settings.urls.base;
  const facts: LayoutFact[] = [
    {
      name: 'local-references',
      value: base,
      filter: { 'idx.ref': { $regex: `^[^|]*\\|${escapeRegex(`${base}/`)}` } },
      describe: `references to ${base} made relative`,
    },
    {
      name: 'patient-compartments',
      value: PATIENT_COMPARTMENT_CODE,
      // those holding an entry already are done (a document the scan rewrote can come up again)
      filter: {
        $and: [
          { 'idx.ref': { $regex: '^[^|*]+\\|Patient/' } },
          { 'idx.ref': { $not: new RegExp(ANY_PATIENT_COMPARTMENT_PATTERN) } },
        ],
      },
      describe: 'Patient compartment entries added',
    },
  ];
  for (const fact of facts) await bringAbout(db, resources, settings, fact);
}

async function bringAbout(
  db: mongo.Db,
  resources: mongo.Collection<ResourceDoc>,
  settings: IndexSettings,
  fact: LayoutFact,
): Promise<void> {
  const layout = db.collection<LayoutDoc>(STORE_LAYOUT_COLLECTION);
  const done = await layout.findOne({ _id: fact.name });
  if ((done?.value ?? done?.base) === fact.value) return;
  const options = indexOptions(settings);
  // a scan of the whole store outlives DB_TIMEOUT_MS: the deadline holds for each batch instead
  const cursor = resources.find(fact.filter, {
    projection: { _id: 1, c: 1, u: 1, v: 1, vid: 1, json: 1 },
    ...LONG_CURSOR,
  });
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
      logger.log(`${fact.describe}: ${rewritten} documents so far`);
    }
  }
  await flush();
  if (rewritten > 0) logger.log(`${fact.describe} in ${rewritten} documents`);
  await layout.updateOne({ _id: fact.name }, { $set: { value: fact.value } }, { upsert: true });
}
