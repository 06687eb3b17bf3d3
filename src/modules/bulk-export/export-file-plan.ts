/**
 * How one resource type's key space is cut into export files (docs/storage.md). The planner does not read
 * every key: the database counts the matching resources per key prefix (the first characters of
 * the id) in one aggregation, and only a prefix holding more than a file's worth is looked at
 * closer. Those counts arrive as units in key order; this module packs consecutive units into files.
 *
 * A unit is a run of the type's key space: keys ≥ `start` and below the next unit's `start`. Files
 * are half-open key ranges [from, to) cut only at unit starts; the first file starts at the type's
 * first key (`from` null) and the last ends past its last key (`to` null). So the files of a type
 * partition its whole key space — a resource lands in exactly one file whatever its id — and each
 * file's `count` is the sum of its units' counts.
 */

/** Keys from `start` (inclusive) up to the next unit's start; `count` matching resources in it. */
export interface KeyUnit {
  start: string;
  count: number;
}

/** One file: keys in [from, to); null = the type's first key / past its last key. */
export interface FileRange {
  from: string | null;
  to: string | null;
  count: number;
}

/**
 * Packs units (in key order, each of at most `perFile` resources) into as few files of at most
 * `perFile` resources as keeps the key order (greedy is optimal for contiguous packing). A unit of
 * more than `perFile` still becomes one file of its own: the caller splits such units first.
 * Units counting nothing add no file.
 */
export function packFiles(units: readonly KeyUnit[], perFile: number): FileRange[] {
  const files: FileRange[] = [];
  let current: { from: string | null; count: number } | null = null;
  for (const unit of units) {
    if (unit.count <= 0) continue;
    if (current && current.count + unit.count > perFile) {
      files.push({ from: current.from, to: unit.start, count: current.count });
      current = { from: unit.start, count: 0 };
    }
    current ??= { from: null, count: 0 };
    current.count += unit.count;
  }
  if (current) files.push({ from: current.from, to: null, count: current.count });
  return files;
}
