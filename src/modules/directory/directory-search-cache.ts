import { Logger } from '@nestjs/common';
import type { SystemType } from './directory-entry';
import { DirectoryMemoryIndex, IndexedEntry, MemoryPage } from './directory-memory-index';

/** What the cache needs from the repository: the version document and a full read. */
export interface DirectorySource {
  /** The directory's version: moved by every write, after the write. */
  readVersion(): Promise<number>;
  /** Every active entry, or null when there are more than `max` (then the copy is not built). */
  loadActive(max: number): Promise<IndexedEntry[] | null>;
}

/**
 * Directory searches served from memory when the copy is provably current, else from the database.
 *
 * Why (bench/directory.ts at 100,000 entries on DocumentDB): a word matching many
 * entries makes the database fetch and sort every match for one page (no index-ordered sort in
 * that engine): p99 1.2 s at 8 connections, 107 ms p50 for the raw driver alone. In memory a page is
 * a binary search and a slice.
 *
 * Freshness is the database's: every write moves a version document after it is done; every
 * search reads that one document (a point read by `_id`) and uses the copy only if it was built at
 * that version, else it searches the database and starts one rebuild in the background. A copy is
 * labelled with a version only when the version did not move while it was read, so a write by any
 * process (another instance, the CLI import) is seen by the next search, as with no copy at all.
 */
export class DirectorySearchCache {
  private readonly logger = new Logger('DirectorySearchCache');
  private copy: { version: number; index: DirectoryMemoryIndex } | null = null;
  private rebuilding: Promise<void> | null = null;
  /** A version the copy was found too large for: no rebuild until the version moves again. */
  private tooLargeAt: number | null = null;

  constructor(
    private readonly source: DirectorySource,
    private readonly maxEntries: number,
  ) {}

  /** The page from memory, or null when the copy is not at the current version (search the database). */
  async search(
    words: readonly string[],
    systemType: SystemType | undefined,
    offset: number,
    limit: number,
  ): Promise<MemoryPage | null> {
    if (this.maxEntries === 0) return null;
    const version = await this.source.readVersion();
    if (this.copy?.version === version) return this.copy.index.search(words, systemType, offset, limit);
    if (this.tooLargeAt !== version) this.startRebuild();
    return null;
  }

  /** Resolves once the copy is at the current version, or found too large (benchmarks, tests). */
  async warm(): Promise<void> {
    await this.rebuilding;
    if (this.maxEntries === 0) return;
    const version = await this.source.readVersion();
    if (this.copy?.version === version || this.tooLargeAt === version) return;
    this.startRebuild();
    await this.rebuilding;
  }

  /** Starts one rebuild unless one is running; its failure only means searches stay in the database. */
  private startRebuild(): void {
    this.rebuilding ??= this.rebuild()
      .catch((err: unknown) => this.logger.warn(`directory copy not rebuilt: ${(err as Error).message}`))
      .finally(() => {
        this.rebuilding = null;
      });
  }

  private async rebuild(): Promise<void> {
    const before = await this.source.readVersion();
    const entries = await this.source.loadActive(this.maxEntries);
    const after = await this.source.readVersion();
    if (entries === null) {
      this.tooLargeAt = after;
      this.copy = null;
      return;
    }
    // a write landed while reading: this copy may hold half of it; the next search rebuilds again
    if (before !== after) return;
    this.copy = { version: before, index: new DirectoryMemoryIndex(entries) };
  }
}
