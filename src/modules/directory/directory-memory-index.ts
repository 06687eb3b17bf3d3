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

/** Prefix bitmaps kept per index: 256 × 12.5 KB at 100,000 entries. */
const PREFIX_MASKS_KEPT = 256;

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

function popcount(x: number): number {
  let v = x - ((x >>> 1) & 0x55555555);
  v = (v & 0x33333333) + ((v >>> 2) & 0x33333333);
  return (((v + (v >>> 4)) & 0x0f0f0f0f) * 0x01010101) >>> 24;
}

/**
 * The active directory entries in search order (`sort_name`, then id) with a sorted word list:
 * a query word is a binary search for the range of stored words it prefixes, each word pointing at
 * its entry's rank. Matches are a bitmap over ranks (one bit per entry: 12.5 KB at 100,000 entries),
 * so several words and the system type are ANDs, the total a population count, and a page the
 * next set bits: no sorting per search. Same matching as the database filter (every query word a
 * prefix of some word of the entry; optional system type) and the same order.
 */
export class DirectoryMemoryIndex {
  private readonly ranked: IndexedEntry[];
  /** Every (word, rank) pair, sorted by word (UTF-16 order: only prefix ranges are looked up). */
  private readonly words: string[] = [];
  private readonly wordRanks: Int32Array;
  private readonly typeMasks = new Map<string, Uint32Array>();
  private readonly allMask: Uint32Array;
  /**
   * Bitmaps of recently asked prefixes, least recently used first. Building one walks every
   * (word, rank) pair the prefix covers (a common word at 100,000 entries: tens of thousands, which
   * was half of the server's CPU in the directory benchmark's profile); the index never changes
   * (a new version builds a new index), so a bitmap stays right for its life. Read-only once made.
   */
  private readonly prefixMasks = new Map<string, Uint32Array>();

  constructor(entries: readonly IndexedEntry[]) {
    this.ranked = [...entries].sort(
      (a, b) => compareCodePoints(a.sortName, b.sortName) || compareCodePoints(a.entry.id, b.entry.id),
    );
    const pairs: Array<[string, number]> = [];
    this.allMask = this.emptyMask();
    this.ranked.forEach((e, rank) => {
      for (const word of new Set(e.words)) pairs.push([word, rank]);
      setBit(this.allMask, rank);
      const type = e.entry.system_type;
      if (!this.typeMasks.has(type)) this.typeMasks.set(type, this.emptyMask());
      setBit(this.typeMasks.get(type)!, rank);
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
    const mask = Uint32Array.from(
      systemType ? (this.typeMasks.get(systemType) ?? this.emptyMask()) : this.allMask,
    );
    for (const word of queryWords) {
      const matching = this.maskOfPrefix(word);
      for (let i = 0; i < mask.length; i += 1) mask[i] &= matching[i];
    }
    let total = 0;
    for (let i = 0; i < mask.length; i += 1) if (mask[i] !== 0) total += popcount(mask[i]);
    const entries: DirectoryEntry[] = [];
    let skip = offset;
    for (let i = 0; i < mask.length && entries.length < limit; i += 1) {
      let bits = mask[i];
      if (bits === 0) continue;
      const count = popcount(bits);
      if (skip >= count) {
        skip -= count;
        continue;
      }
      while (bits !== 0 && entries.length < limit) {
        const low = bits & -bits;
        if (skip > 0) skip -= 1;
        else entries.push(this.ranked[i * 32 + (31 - Math.clz32(low))].entry);
        bits ^= low;
      }
    }
    return { total, entries };
  }

  /** The entries having a word that starts with `prefix`, as a bitmap over ranks (not to be changed). */
  private maskOfPrefix(prefix: string): Uint32Array {
    const cached = this.prefixMasks.get(prefix);
    if (cached) {
      this.prefixMasks.delete(prefix);
      this.prefixMasks.set(prefix, cached);
      return cached;
    }
    const mask = this.buildPrefixMask(prefix);
    this.prefixMasks.set(prefix, mask);
    if (this.prefixMasks.size > PREFIX_MASKS_KEPT) {
      this.prefixMasks.delete(this.prefixMasks.keys().next().value!);
    }
    return mask;
  }

  private buildPrefixMask(prefix: string): Uint32Array {
    const mask = this.emptyMask();
    for (
      let i = lowerBound(this.words, prefix);
      i < this.words.length && this.words[i].startsWith(prefix);
      i += 1
    ) {
      setBit(mask, this.wordRanks[i]);
    }
    return mask;
  }

  private emptyMask(): Uint32Array {
    return new Uint32Array(Math.ceil(this.ranked.length / 32));
  }
}

function setBit(mask: Uint32Array, rank: number): void {
  mask[rank >>> 5] |= 1 << (rank & 31);
}
