import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'fs';
import { tmpdir } from 'os';
import { join } from 'path';
import { createTestApp, runCliInProcess, TestApp } from '@app/testing';
import { parseNdjson } from '../src/modules/directory/directory-import-parser';
import { findSeedFile } from '../src/modules/directory/directory-seeder';
import { DirectoryCriteria, DirectoryRepository } from '../src/modules/directory/directory.repository';
import { DirectoryService } from '../src/modules/directory/directory.service';
import { foldedWords, SYSTEM_TYPES } from '../src/modules/directory/directory-entry';

/**
 * The in-memory copy of the directory: the same pages as the database query,
 * never older than the database (a write by another process is seen by the next search), and the
 * database alone above DIRECTORY_CACHE_MAX_ENTRIES.
 */
describe('directory search copy (e2e)', () => {
  let t: TestApp;
  let dir: string;
  const repository = () => t.app.get(DirectoryRepository, { strict: false });

  beforeAll(async () => {
    t = await createTestApp({ DIRECTORY_SEED: 'false' });
    dir = mkdtempSync(join(tmpdir(), 'directory-copy-'));
    const seed = parseNdjson(readFileSync(findSeedFile()!, 'utf8'));
    const summary = await t.app.get(DirectoryService).importRecords(seed);
    expect(summary.rejected).toEqual([]);
  });
  afterAll(async () => {
    rmSync(dir, { recursive: true, force: true });
    await t?.close();
  });

  it('answers from memory once built, with the pages and totals of the database query', async () => {
    await repository().warmSearchCopy();
    const seedWords = readFileSync(findSeedFile()!, 'utf8')
      .split('\n')
      .slice(0, 40)
      .flatMap((line) => foldedWords(line).filter((w) => w.length > 2 && !/^\d/.test(w)));
    const criteria: DirectoryCriteria[] = [{ words: [] }, { words: [], systemType: 'Payer2Payer' }];
    for (const word of [...new Set(seedWords)].slice(0, 25)) {
      criteria.push({ words: [word.slice(0, 1)] }, { words: [word.slice(0, 3)] }, { words: [word] });
      criteria.push({ words: [word.slice(0, 2), 'h'], systemType: SYSTEM_TYPES[word.length % 3] });
    }
    criteria.push({ words: ['massachusettsgeneralhospitalx'] }, { words: ['zzzz'] });
    for (const c of criteria) {
      for (const offset of [0, 20]) {
        const memory = await repository().searchInMemory(c, offset, 20);
        const database = await repository().searchInDatabase(c, offset, 20);
        expect(memory).not.toBeNull();
        expect({ c, offset, page: memory }).toEqual({ c, offset, page: database });
      }
    }
  });

  it('a write by another app instance (the CLI import, its own copy) is in the very next search; the copy catches up', async () => {
    await repository().warmSearchCopy();
    expect(await repository().searchInMemory({ words: ['quokka'] }, 0, 20)).toEqual({
      total: 0,
      entries: [],
    });
    const file = join(dir, 'new.ndjson');
    writeFileSync(
      file,
      `${JSON.stringify({ id: 'quokka-1', name: 'Quokka Island Clinic', system_type: 'HealthSystem', address: { line: [], city: 'Perth' }, status: 'active' })}\n`,
    );
    const run = await runCliInProcess(t, ['directory', 'import', file, '--no-progress']);
    expect(JSON.parse(run.stdout.trim())).toMatchObject({ inserted: 1, rejected: [] });
    // the copy is now behind the version document: it is not used ...
    expect(await repository().searchInMemory({ words: ['quokka'] }, 0, 20)).toBeNull();
    // ... and the search answers from the database meanwhile
    const found = await t.app.get(DirectoryService).search({ query: 'quokka isl' });
    expect(found.results.map((e) => e.id)).toEqual(['quokka-1']);
    await repository().warmSearchCopy();
    const fromMemory = await repository().searchInMemory({ words: ['quokka'] }, 0, 20);
    expect(fromMemory?.entries.map((e) => e.id)).toEqual(['quokka-1']);
  });

  it('an entry set inactive leaves the next search at once', async () => {
    await repository().warmSearchCopy();
    await t.app.get(DirectoryService).importRecords([
      {
        line: 1,
        record: {
          id: 'quokka-1',
          name: 'Quokka Island Clinic',
          system_type: 'HealthSystem',
          status: 'inactive',
        },
      },
    ]);
    expect((await t.app.get(DirectoryService).search({ query: 'quokka' })).total).toBe(0);
  });

  it('above DIRECTORY_CACHE_MAX_ENTRIES every search is the database query', async () => {
    const small = await createTestApp({ DIRECTORY_SEED: 'false', DIRECTORY_CACHE_MAX_ENTRIES: '2' });
    try {
      const service = small.app.get(DirectoryService);
      await service.importRecords(
        ['a', 'b', 'c'].map((id, i) => ({
          line: i + 1,
          record: { id, name: `Tiny ${id} Hospital`, system_type: 'HealthSystem', status: 'active' },
        })),
      );
      await service.warmSearchCopy();
      const repo = small.app.get(DirectoryRepository, { strict: false });
      expect(await repo.searchInMemory({ words: ['tiny'] }, 0, 20)).toBeNull();
      expect((await service.search({ query: 'tiny' })).results.map((e) => e.id)).toEqual(['a', 'b', 'c']);
    } finally {
      await small.close();
    }
  });
});
