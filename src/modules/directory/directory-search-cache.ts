import type { Collection } from 'mongoose';
import type { DirectoryEntry, SystemType } from './directory-entry';

/** One active entry as the in-memory search sees it. */
export interface CachedEntry {
  entry: DirectoryEntry;
  /** Folded words of name, address lines and city (the same words the stored prefixes come from). */
  words: readonly string[];
  sortName: string;
}

export interface CachedPage {
  total: number;
  entries: DirectoryEntry[];
}

/**
 * The directory is small and changes rarely (imports, seed), while searches are frequent; on
 * FerretDB 1.x every filtered query decodes the whole collection (~30 s for 2,000 entries under load).
 * So searches run over an in-memory copy of the active entries, sorted by name then id. Every write
 * bumps a version document (`directory_meta`, `_id: 'version'`); each search reads that one tiny
 * document and reloads the copy when the version moved, so a write by any process (the CLI import
 * included) is seen by the next search of every instance.
 */
export class DirectorySearchCache {
  private entries: CachedEntry[] = [];
  private version: number | null = null;
  private loading: Promise<void> | null = null;

  constructor(
    private readonly meta: Collection,
    private readonly loadActive: () => Promise<CachedEntry[]>,
  ) {}

  /** Records a change (after a write): other instances see it through the version document. */
  async bump(): Promise<void> {
    await this.meta.updateOne({ _id: 'version' as any }, { $inc: { v: 1 } }, { upsert: true });
  }

  async search(
    words: readonly string[],
    systemType: SystemType | undefined,
    offset: number,
    limit: number,
  ): Promise<CachedPage> {
    await this.fresh();
    const matches = this.entries.filter(
      (c) =>
        (!systemType || c.entry.system_type === systemType) &&
        words.every((w) => c.words.some((word) => word.startsWith(w))),
    );
    return { total: matches.length, entries: matches.slice(offset, offset + limit).map((c) => c.entry) };
  }

  private async fresh(): Promise<void> {
    const doc = await this.meta.findOne({ _id: 'version' as any });
    const current = typeof doc?.v === 'number' ? doc.v : 0;
    if (current === this.version) return;
    // one load at a time; concurrent searches wait for it
    this.loading ??= this.loadActive()
      .then((entries) => {
        this.entries = entries.sort((a, b) =>
          a.sortName < b.sortName
            ? -1
            : a.sortName > b.sortName
              ? 1
              : a.entry.id < b.entry.id
                ? -1
                : a.entry.id > b.entry.id
                  ? 1
                  : 0,
        );
        this.version = current;
      })
      .finally(() => {
        this.loading = null;
      });
    await this.loading;
  }
}
