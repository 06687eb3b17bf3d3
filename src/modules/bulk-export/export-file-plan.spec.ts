import { FileRange, KeyUnit, packFiles } from './export-file-plan';

/** Which file of `files` holds `key` (half-open ranges, null = open end); -1 when none. */
function fileOf(files: readonly FileRange[], key: string): number[] {
  return files.flatMap((f, i) =>
    (f.from === null || key >= f.from) && (f.to === null || key < f.to) ? [i] : [],
  );
}

/** Units of sorted keys grouped by their first `length` characters (what the database counts). */
function unitsOf(keys: readonly string[], length: number): KeyUnit[] {
  const units: KeyUnit[] = [];
  for (const key of [...keys].sort()) {
    const start = key.slice(0, length);
    const last = units[units.length - 1];
    if (last?.start === start) last.count += 1;
    else units.push({ start, count: 1 });
  }
  return units;
}

describe('packFiles', () => {
  it('no units or only empty ones: no file', () => {
    expect(packFiles([], 10)).toEqual([]);
    expect(packFiles([{ start: 'a', count: 0 }], 10)).toEqual([]);
  });

  it('one file spans the whole key space when everything fits', () => {
    const files = packFiles(
      [
        { start: 'b', count: 3 },
        { start: 'k', count: 4 },
      ],
      10,
    );
    expect(files).toEqual([{ from: null, to: null, count: 7 }]);
  });

  it('cuts at unit starts, never above perFile, first and last file open-ended', () => {
    const files = packFiles(
      [
        { start: 'a', count: 4 },
        { start: 'b', count: 4 },
        { start: 'c', count: 3 },
        { start: 'd', count: 0 },
        { start: 'e', count: 10 },
        { start: 'f', count: 1 },
      ],
      10,
    );
    expect(files).toEqual([
      { from: null, to: 'c', count: 8 },
      { from: 'c', to: 'e', count: 3 },
      { from: 'e', to: 'f', count: 10 },
      { from: 'f', to: null, count: 1 },
    ]);
  });

  it('brute force: every key in exactly one file, counts right, files ≤ perFile, as few as contiguous packing allows', () => {
    let seed = 7;
    const random = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
    const alphabet = '-.0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
    for (let round = 0; round < 200; round += 1) {
      const n = Math.floor(random() * 60);
      const keys = new Set<string>();
      // short ids too: an id equal to a prefix belongs to that prefix's unit
      while (keys.size < n) {
        const length = 1 + Math.floor(random() * 4);
        let key = '';
        for (let i = 0; i < length; i += 1)
          key += alphabet[Math.floor(random() * (round % 3 === 0 ? 3 : 64))];
        keys.add(key);
      }
      const perFile = 1 + Math.floor(random() * 8);
      const units = unitsOf([...keys], 2).flatMap((u) =>
        // units above perFile are split by the caller first; here: one unit per key of those
        u.count > perFile
          ? [...keys]
              .filter((k) => k.slice(0, 2) === u.start)
              .sort()
              .map((k, i) => ({ start: i === 0 ? u.start : k, count: 1 }))
          : [u],
      );
      const files = packFiles(units, perFile);
      const counts = files.map(() => 0);
      for (const key of keys) {
        const holders = fileOf(files, key);
        expect(holders).toHaveLength(1);
        counts[holders[0]] += 1;
      }
      expect(counts).toEqual(files.map((f) => f.count));
      for (const file of files) expect(file.count).toBeLessThanOrEqual(perFile);
      // contiguous packing: no two neighbouring files would fit into one
      for (let i = 1; i < files.length; i += 1)
        expect(files[i - 1].count + units.find((u) => u.start === files[i].from)!.count).toBeGreaterThan(
          perFile,
        );
    }
  });
});
