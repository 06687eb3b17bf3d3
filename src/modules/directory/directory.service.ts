import { Inject, Injectable } from '@nestjs/common';
import { pagingParameter } from '../../common/paging-parameter';
import { SETTINGS } from '../../config/config.module';
import { Settings } from '../../config/settings';
import {
  DirectoryEntry,
  DirectoryEntryInput,
  parseQueryWords,
  SystemType,
  validateEntry,
} from './directory-entry';
import { ParsedRecord } from './directory-import-parser';
import { DirectoryPage, DirectoryRepository } from './directory.repository';

/** Results per page of `/api/search` (docs/api.md §11). */
export const SEARCH_PAGE_SIZE = 20;
/** Most entries one clinical-list answer holds; `X-Total-Count` tells the full count. */
export const CLINICAL_LIST_MAX = 500;
const IMPORT_BATCH = 500;

/** Inputs of `/api/search` (query string, or body fields on POST), checked by DirectorySearchBodyDto. */
export interface SearchInput {
  query?: string;
  /** Read here as on every route (pagingParameter). */
  offset?: unknown;
  system_type?: SystemType;
}

export interface SearchResult {
  total: number;
  offset: number;
  results: DirectoryEntry[];
}

export interface ImportSummary {
  inserted: number;
  updated: number;
  rejected: { line: number; reason: string }[];
}

export interface ImportProgress {
  /** Line of the record just read (the parsers yield in file order). */
  line: number;
}

@Injectable()
export class DirectoryService {
  constructor(
    private readonly repository: DirectoryRepository,
    @Inject(SETTINGS) private readonly settings: Settings,
  ) {}

  /** `/api/search`: every query word must start some word of name, address.line or address.city. */
  async search(input: SearchInput): Promise<SearchResult> {
    const offset = this.parseOffset(input.offset);
    const page = await this.find(input.query, input.system_type, offset, SEARCH_PAGE_SIZE);
    return { total: page.total, offset, results: page.entries };
  }

  /** `/connect/system/clinical`: the supported systems of one type (default HealthSystem), by name. */
  async clinicalList(
    systemType: SystemType | undefined,
    query: string | undefined,
    offset: unknown,
  ): Promise<DirectoryPage> {
    return this.find(query, systemType ?? 'HealthSystem', this.parseOffset(offset), CLINICAL_LIST_MAX);
  }

  /** Search shared by the FHIR view (which parses its own parameters). */
  async find(query: string | undefined, systemType: SystemType | undefined, offset: number, limit: number) {
    const parsed = parseQueryWords(query);
    if (parsed.matchesNothing) return { total: 0, entries: [] };
    return this.repository.search({ words: parsed.words, systemType }, offset, limit);
  }

  async findById(id: string): Promise<DirectoryEntry | null> {
    return this.repository.findById(id);
  }

  /** The deepest offset served: SEARCH_MAX_SKIP (a deeper page is a scan, not a picker). */
  get maxOffset(): number {
    return this.settings.searchMaxSkip;
  }

  /** `offset` as every route reads it (pagingParameter), at most SEARCH_MAX_SKIP. */
  private parseOffset(value: unknown): number {
    return pagingParameter('offset', value, { fallback: 0, max: this.maxOffset, overMax: 'refuse' });
  }

  /**
   * Idempotent upsert of parsed records by id. Bad records are collected with their line and
   * reason; the rest load in batches. A repeated id inside one batch flushes the batch first,
   * so the later line wins, as it would line by line.
   */
  async importRecords(
    records: Iterable<ParsedRecord>,
    onProgress?: (p: ImportProgress) => void,
  ): Promise<ImportSummary> {
    const summary: ImportSummary = { inserted: 0, updated: 0, rejected: [] };
    let batch = new Map<string, DirectoryEntryInput>();
    const flush = async () => {
      if (batch.size === 0) return;
      const counts = await this.repository.upsertMany([...batch.values()]);
      summary.inserted += counts.inserted;
      summary.updated += counts.updated;
      batch = new Map();
    };
    for (const item of records) {
      onProgress?.({ line: item.line });
      if ('error' in item) {
        summary.rejected.push({ line: item.line, reason: item.error });
        continue;
      }
      const checked = validateEntry(item.record);
      if (!checked.ok) {
        summary.rejected.push({ line: item.line, reason: checked.reason });
        continue;
      }
      if (batch.has(checked.entry.id)) await flush();
      batch.set(checked.entry.id, checked.entry);
      if (batch.size >= IMPORT_BATCH) await flush();
    }
    await flush();
    return summary;
  }

  /** Loads valid records whose ids are new (first-start seed); returns inserted and rejected. */
  async seedRecords(
    records: Iterable<ParsedRecord>,
  ): Promise<{ inserted: number; rejected: ImportSummary['rejected'] }> {
    const entries: DirectoryEntryInput[] = [];
    const rejected: ImportSummary['rejected'] = [];
    for (const item of records) {
      if ('error' in item) {
        rejected.push({ line: item.line, reason: item.error });
        continue;
      }
      const checked = validateEntry(item.record);
      if (checked.ok) entries.push(checked.entry);
      else rejected.push({ line: item.line, reason: checked.reason });
    }
    return { inserted: await this.repository.insertNew(entries), rejected };
  }

  /** Every entry as NDJSON lines, in id order (re-importable as is). */
  async *exportNdjson(): AsyncGenerator<string> {
    for await (const entry of this.repository.streamAll()) yield `${JSON.stringify(entry)}\n`;
  }

  async count(): Promise<number> {
    return this.repository.count();
  }

  /** Builds the in-memory search copy now instead of at the first search (benchmarks, tests). */
  async warmSearchCopy(): Promise<void> {
    await this.repository.warmSearchCopy();
  }
}
