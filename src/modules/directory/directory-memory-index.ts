import type { DirectoryEntry, SystemType } from './directory-entry';

/** One active entry as the in-memory search sees it. */
export interface IndexedEntry {
  entry: DirectoryEntry;
  /** Folded words of name, address lines and city: the words the stored prefixes come from. */
  words: readonly string[];
  /** The stored `sort_name`. */
  sortName: string;
}

export interface MemoryPage {
  total: number;
  entries: DirectoryEntry[];
}

const SURROGATE = /[\ud800-\udfff]/;

/**
 * The database orders strings by code point (UTF-8 bytes); JavaScript's `<` by UTF-16 unit, which
 * differs only where a character above U+FFFF meets one in U+E000–U+FFFF.
 */
function compareCodePoints(a: string, b: string): number {
  if (!SURROGATE.test(a) && !SURROGATE.test(b)) return a < b ? -1 : a > b ? 1 : 0;
  const x = Array.from(a, (c) => c.codePointAt(0)!);
  const y = Array.from(b, (c) => c.codePointAt(0)!);
  for (let i = 0; i < Math.min(x.length, y.length); i += 1) if (x[i] !== y[i]) return x[i] - y[i];
  return x.length - y.length;
}

/** Index of the first element of the sorted `words` not below `key`. */
function lowerBound(words: readonly string[], key: string): number {
  let lo = 0;
  let hi = words.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (words[mid] < key) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/**
 * The active directory entries in search order (`sort_name`, then id) with a sorted word list:
 * a query word is a binary search for the range of stored words it prefixes, each word pointing at
 * its entry's rank. Same matching as the database filter (every query word a prefix of some word of
 * the entry; optional system type) and the same order, so a page is a slice of ranks.
 */
export class DirectoryMemoryIndex {
  private readonly ranked: IndexedEntry[];
  /** Every (word, rank) pair, sorted by word (UTF-16 order: only prefix ranges are looked up). */
  private readonly words: string[] = [];
  private readonly wordRanks: Int32Array;

  constructor(entries: readonly IndexedEntry[]) {
    this.ranked = [...entries].sort(
      (a, b) => compareCodePoints(a.sortName, b.sortName) || compareCodePoints(a.entry.id, b.entry.id),
    );
    const pairs: Array<[string, number]> = [];
    this.ranked.forEach((e, rank) => {
      for (const word of new Set(e.words)) pairs.push([word, rank]);
    });
    pairs.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : a[1] - b[1]));
    this.wordRanks = new Int32Array(pairs.length);
    pairs.forEach(([word, rank], i) => {
      this.words.push(word);
      this.wordRanks[i] = rank;
    });
  }

  get size(): number {
    return this.ranked.length;
  }

  search(
    queryWords: readonly string[],
    systemType: SystemType | undefined,
    offset: number,
    limit: number,
  ): MemoryPage {
    let ranks: Int32Array | null = null;
    // the rarest word first: every later set only narrows it
    const sets = queryWords.map((w) => this.ranksOfPrefix(w)).sort((a, b) => a.length - b.length);
    for (const set of sets) ranks = ranks === null ? set : intersectSorted(ranks, set);
    const matches: number[] = [];
    const candidates = ranks ?? null;
    const count = candidates === null ? this.ranked.length : candidates.length;
    for (let i = 0; i < count; i += 1) {
      const rank = candidates === null ? i : candidates[i];
      if (!systemType || this.ranked[rank].entry.system_type === systemType) matches.push(rank);
    }
    return {
      total: matches.length,
      entries: matches.slice(offset, offset + limit).map((rank) => this.ranked[rank].entry),
    };
  }

  /** Sorted, distinct ranks of the entries having a word that starts with `prefix`. */
  private ranksOfPrefix(prefix: string): Int32Array {
    const from = lowerBound(this.words, prefix);
    let to = from;
    while (to < this.words.length && this.words[to].startsWith(prefix)) to += 1;
    const ranks = this.wordRanks.slice(from, to).sort();
    let distinct = 0;
    for (let i = 0; i < ranks.length; i += 1) {
      if (i === 0 || ranks[i] !== ranks[i - 1]) ranks[distinct++] = ranks[i];
    }
    return ranks.subarray(0, distinct);
  }
}

function intersectSorted(a: Int32Array, b: Int32Array): Int32Array {
  const out = new Int32Array(Math.min(a.length, b.length));
  let n = 0;
  for (let i = 0, j = 0; i < a.length && j < b.length;) {
    if (a[i] === b[j]) {
      out[n++] = a[i];
      i += 1;
      j += 1;
    } else if (a[i] < b[j]) i += 1;
    else j += 1;
  }
  return out.subarray(0, n);
}
