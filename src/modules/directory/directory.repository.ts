import { Inject, Injectable } from '@nestjs/common';
import { InjectModel } from '@nestjs/mongoose';
import type { FilterQuery, Model } from 'mongoose';
import {
  DirectoryEntry,
  DirectoryEntryInput,
  entryWords,
  escapeRegex,
  MAX_PREFIX_LENGTH,
  searchPrefixes,
  sortName,
  SystemType,
} from './directory-entry';
import { DIRECTORY_ENTRY_MODEL, DirectoryEntryDocument } from './directory-entry.schema';
import { DirectorySearchCache } from './directory-search-cache';
import type { IndexedEntry } from './directory-memory-index';
import { SETTINGS } from '../../config/config.module';
import type { Settings } from '../../config/settings';
import { LONG_CURSOR } from '../../database/ensure-indexes';
import { isDuplicateKey } from '../../storage/duplicate-key';

/** The one document of `directory_meta`: its `v` moves after every write to the directory. */
const VERSION_ID = 'version';
const NO_DEADLINE = { timeoutMS: 0 } as Record<string, unknown>;

/** What the search matches: every word as a word prefix, optionally one system type, active only. */
export interface DirectoryCriteria {
  words: string[];
  systemType?: SystemType;
}

export interface DirectoryPage {
  total: number;
  entries: DirectoryEntry[];
}

export interface UpsertCounts {
  inserted: number;
  updated: number;
}

/** The only code that touches the directory collection. The directory is global (not tenant data). */
@Injectable()
export class DirectoryRepository {
  private readonly cache: DirectorySearchCache;

  constructor(
    @InjectModel(DIRECTORY_ENTRY_MODEL) private readonly model: Model<DirectoryEntryDocument>,
    @Inject(SETTINGS) settings: Settings,
  ) {
    this.cache = new DirectorySearchCache(
      { readVersion: () => this.readVersion(), loadActive: (max) => this.loadActive(max) },
      settings.directoryCacheMaxEntries,
    );
  }

  /**
   * Idempotent upsert by id (import, seed). One bulkWrite per batch; `created_at` is kept on
   * update. Words and prefixes are recomputed from the stored fields so they never drift.
   */
  async upsertMany(inputs: readonly DirectoryEntryInput[], now = new Date()): Promise<UpsertCounts> {
    if (inputs.length === 0) return { inserted: 0, updated: 0 };
    const result = await this.model.bulkWrite(
      inputs.map((input) => {
        const { _id, created_at, ...fields } = storedForm(input, now);
        return {
          updateOne: {
            filter: { _id },
            update: { $set: fields, $setOnInsert: { created_at } },
            upsert: true,
          },
        };
      }),
      // import and seed batches are admin jobs, not requests: no DB_TIMEOUT_MS deadline
      { ordered: false, timeoutMS: 0 } as Record<string, unknown>,
    );
    await this.bumpVersion();
    return { inserted: result.upsertedCount, updated: result.matchedCount };
  }

  /**
   * Inserts entries whose ids are not stored yet, in one command (the first-start seed: cheaper
   * than upserts). An id that exists already is skipped, not overwritten.
   */
  async insertNew(inputs: readonly DirectoryEntryInput[], now = new Date()): Promise<number> {
    if (inputs.length === 0) return 0;
    try {
      const docs = inputs.map((input) => storedForm(input, now));
      const result = await this.model.collection.insertMany(docs as any[], { ordered: false, timeoutMS: 0 });
      await this.bumpVersion();
      return result.insertedCount;
    } catch (e) {
      await this.bumpVersion();
      const err = e as { code?: number; insertedCount?: number; writeErrors?: { code?: number }[] };
      const writeErrors = err.writeErrors ?? [];
      const onlyDuplicates = writeErrors.length > 0 && writeErrors.every(isDuplicateKey);
      if (!onlyDuplicates && !isDuplicateKey(err)) throw e;
      return err.insertedCount ?? inputs.length - writeErrors.length;
    }
  }

  /**
   * Active entries matching every word as a word prefix, in name order: from the in-memory copy when
   * it is at the current version (`DirectorySearchCache`), else from the database.
   */
  async search(criteria: DirectoryCriteria, offset: number, limit: number): Promise<DirectoryPage> {
    return (
      (await this.searchInMemory(criteria, offset, limit)) ?? this.searchInDatabase(criteria, offset, limit)
    );
  }

  /** The page from the in-memory copy, or null when the copy is not at the current version. */
  async searchInMemory(
    criteria: DirectoryCriteria,
    offset: number,
    limit: number,
  ): Promise<DirectoryPage | null> {
    return this.cache.search(criteria.words, criteria.systemType, offset, limit);
  }

  /** Resolves once a copy at the current version is built (or found too large): benchmarks, tests. */
  async warmSearchCopy(): Promise<void> {
    await this.cache.warm();
  }

  /**
   * The same search in the database: equality on the multikey `prefixes` index (no regex from
   * input), sorted by the index's `sort_name`.
   */
  async searchInDatabase(criteria: DirectoryCriteria, offset: number, limit: number): Promise<DirectoryPage> {
    const filter = this.filterFor(criteria);
    const [total, docs] = await Promise.all([
      this.model.countDocuments(filter),
      this.model
        .find(filter, { prefixes: 0, words: 0 })
        .sort({ sort_name: 1, _id: 1 })
        .skip(offset)
        .limit(limit)
        .lean<DirectoryEntryDocument[]>(),
    ]);
    return { total, entries: docs.map(toEntry) };
  }

  private async readVersion(): Promise<number> {
    const doc = await this.meta().findOne({ _id: VERSION_ID as any }, { projection: { v: 1 } });
    return typeof doc?.v === 'number' ? doc.v : 0;
  }

  /** After every write: moves the version every instance's copy is checked against. */
  private async bumpVersion(): Promise<void> {
    const bump = () =>
      this.meta().updateOne({ _id: VERSION_ID as any }, { $inc: { v: 1 } }, { upsert: true, ...NO_DEADLINE });
    // two first bumps racing to create the document: one gets a duplicate key; it bumps again
    await bump().catch((e: unknown) => (isDuplicateKey(e) ? bump() : Promise.reject(e)));
  }

  /** Every active entry with its words, or null when there are more than `max`. */
  private async loadActive(max: number): Promise<IndexedEntry[] | null> {
    const docs = await this.model.collection
      .find({ status: 'active' }, { projection: { prefixes: 0 }, ...LONG_CURSOR })
      .limit(max + 1)
      .batchSize(5000)
      .toArray();
    if (docs.length > max) return null;
    return docs.map((doc) => {
      const stored = doc as unknown as DirectoryEntryDocument;
      return { entry: toEntry(stored), words: stored.words ?? [], sortName: stored.sort_name };
    });
  }

  private meta() {
    return this.model.db.collection('directory_meta');
  }

  async findById(id: string): Promise<DirectoryEntry | null> {
    const doc = await this.model.findById(id).lean<DirectoryEntryDocument>();
    return doc ? toEntry(doc) : null;
  }

  /** Exact (an estimated count comes from engine statistics, which lag behind on DocumentDB). */
  async count(): Promise<number> {
    return this.model.countDocuments({});
  }

  /** Every entry (any status) in id order, read in batches: `directory export`. */
  async *streamAll(batchSize = 500): AsyncGenerator<DirectoryEntry> {
    let after: string | null = null;
    for (;;) {
      const filter: FilterQuery<DirectoryEntryDocument> = after === null ? {} : { _id: { $gt: after } };
      const docs = await this.model
        .find(filter)
        .sort({ _id: 1 })
        .limit(batchSize)
        .lean<DirectoryEntryDocument[]>();
      for (const doc of docs) yield toEntry(doc);
      if (docs.length < batchSize) return;
      after = docs[docs.length - 1]._id;
    }
  }

  private filterFor(criteria: DirectoryCriteria): FilterQuery<DirectoryEntryDocument> {
    const filter: FilterQuery<DirectoryEntryDocument> = { status: 'active' };
    if (criteria.systemType) filter.system_type = criteria.systemType;
    if (criteria.words.length === 0) return filter;
    // Values are compared by equality on stored prefixes: no operator or regex comes from input.
    const keys = criteria.words.map((w) => w.slice(0, MAX_PREFIX_LENGTH));
    filter.prefixes = keys.length === 1 ? keys[0] : { $all: keys };
    const long = criteria.words.filter((w) => w.length > MAX_PREFIX_LENGTH);
    if (long.length > 0) {
      // Rare (a query word over 15 characters): the prefix narrows, an anchored literal regex confirms.
      filter.$and = long.map((w) => ({ words: { $regex: `^${escapeRegex(w)}` } }));
    }
    return filter;
  }
}

/** The stored document of an entry: words and prefixes derived from the fields, never sent in. */
export function storedForm(input: DirectoryEntryInput, now: Date): DirectoryEntryDocument {
  const words = entryWords(input);
  const { id, ...fields } = input;
  return {
    _id: id,
    ...fields,
    sort_name: sortName(input.name),
    words,
    prefixes: searchPrefixes(words),
    created_at: now,
    updated_at: now,
  };
}

function toEntry(doc: DirectoryEntryDocument): DirectoryEntry {
  return {
    id: doc._id,
    name: doc.name,
    system_type: doc.system_type as SystemType,
    address: {
      line: doc.address?.line ?? [],
      city: doc.address?.city ?? null,
      state: doc.address?.state ?? null,
      postalCode: doc.address?.postalCode ?? null,
    },
    ehr: doc.ehr ?? null,
    fhir_base_url: doc.fhir_base_url ?? null,
    logo: doc.logo ?? null,
    status: doc.status as DirectoryEntry['status'],
    created_at: new Date(doc.created_at).toISOString(),
    updated_at: new Date(doc.updated_at).toISOString(),
  };
}
