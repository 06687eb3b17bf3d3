import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'fs';
import { tmpdir } from 'os';
import { join } from 'path';
import { getModelToken } from '@nestjs/mongoose';
import type { Model } from 'mongoose';
import { createTestApp, runCliInProcess as runCli, TestApp, type CliRun } from '@app/testing';
import { parseSettings } from '../src/config/settings';
import { createApp } from '../src/create-app';
import { DIRECTORY_ENTRY_MODEL } from '../src/modules/directory/directory-entry.schema';
import { findSeedFile } from '../src/modules/directory/directory-seeder';
import { DirectoryService } from '../src/modules/directory/directory.service';

/** Import (CLI, three formats, bad lines), export, and the first-start seed. */

const NDJSON = [
  '{"id":"n1","name":"North Shore Medical","system_type":"HealthSystem","address":{"line":["81 Highland Ave"],"city":"Salem","state":"MA","postalCode":"01970"}}',
  '{"id":"n2","name":"Broken JSON",',
  '',
  '{"id":"n3","name":"Bad Type","system_type":"Clinic"}',
  '{"id":"n4","name":"Typo Field","system_type":"HealthSystem","systemtype":"x"}',
  '{"id":"n5","name":"Payer One","system_type":"Payer2Payer","fhir_base_url":"https://payer.example/fhir"}',
  '{"id":"n1","name":"North Shore Medical Center","system_type":"HealthSystem","address":{"city":"Salem"}}',
].join('\n');

const JSON_ARRAY = `[
  {"id": "j1", "name": "Jamaica Plain Clinic", "system_type": "HealthSystem"},
  {"id": "j2", "name": }},
  {"id": "j3", "name": "Javelin Health", "system_type": "PayerPatientAccess", "status": "inactive"}
]`;

const CSV =
  'id,name,system_type,address.line,address.city,address.state,address.postalCode,ehr,fhir_base_url,logo,status\n' +
  'c1,"Cape Cod Hospital, Inc",HealthSystem,27 Park St,Hyannis,MA,02601,Meditech,,,active\n' +
  'c2,Only,Three\n' +
  'c3,Bad URL,HealthSystem,,,,,,"not a url",,\n' +
  'c4,"Multi\nLine Name",HealthSystem,1 A St|Floor 2,Hyannis,MA,,,,,\n';

describe('directory import, export and seed (e2e)', () => {
  let t: TestApp;
  let dir: string;

  beforeAll(async () => {
    t = await createTestApp({ DIRECTORY_SEED: 'false' });
    dir = mkdtempSync(join(tmpdir(), 'directory-import-'));
  });
  afterAll(async () => {
    rmSync(dir, { recursive: true, force: true });
    await t?.close();
  });

  const file = (name: string, content: string) => {
    const path = join(dir, name);
    writeFileSync(path, content);
    return path;
  };
  const summaryOf = (run: CliRun) => JSON.parse(run.stdout.trim());
  const directory = () => t.app.get(DirectoryService);

  it('NDJSON: loads good lines, reports bad ones with line numbers, a repeated id updates', async () => {
    const run = await runCli(t, ['directory', 'import', file('a.ndjson', NDJSON), '--no-progress']);
    const summary = summaryOf(run);
    expect(summary.inserted).toBe(2);
    expect(summary.updated).toBe(1); // line 7 re-states n1
    expect(summary.rejected).toEqual([
      { line: 2, reason: expect.stringMatching(/malformed JSON/) },
      { line: 4, reason: expect.stringMatching(/system_type must be one of/) },
      { line: 5, reason: 'unknown field systemtype' },
    ]);
    expect(run.stderr).toMatch(/line 4: system_type must be one of/);
    const n1 = await directory().findById('n1');
    expect(n1).toMatchObject({ name: 'North Shore Medical Center', address: { line: [], city: 'Salem' } });
    expect((await directory().search({ query: 'salem' })).results.map((e) => e.id)).toEqual(['n1']);
  });

  it('re-importing the same file is idempotent: updates only, created_at kept', async () => {
    const before = await directory().findById('n5');
    const summary = summaryOf(
      await runCli(t, ['directory', 'import', join(dir, 'a.ndjson'), '--no-progress']),
    );
    expect(summary).toMatchObject({ inserted: 0, updated: 3 });
    expect(await directory().count()).toBe(2);
    const after = await directory().findById('n5');
    expect(after?.created_at).toBe(before?.created_at);
    expect((after?.updated_at ?? '') >= (before?.updated_at ?? '')).toBe(true);
  });

  it('JSON array: a broken element is reported with its line, the others load', async () => {
    const summary = summaryOf(await runCli(t, ['directory', 'import', file('b.json', JSON_ARRAY)]));
    expect(summary).toEqual({
      inserted: 2,
      updated: 0,
      rejected: [{ line: 3, reason: expect.stringMatching(/malformed JSON/) }],
    });
    // inactive entries are stored but never searched
    expect((await directory().findById('j3'))?.status).toBe('inactive');
    expect((await directory().search({ query: 'javelin' })).total).toBe(0);
  });

  it('CSV: columns are the fields; bad rows are reported with the line they start on', async () => {
    const summary = summaryOf(await runCli(t, ['directory', 'import', file('c.csv', CSV)]));
    expect(summary.inserted).toBe(2);
    expect(summary.rejected).toEqual([
      { line: 3, reason: 'expected 11 columns, found 3' },
      { line: 4, reason: 'fhir_base_url must be an absolute http(s) URL' },
    ]);
    expect(await directory().findById('c1')).toMatchObject({
      name: 'Cape Cod Hospital, Inc',
      address: { line: ['27 Park St'], city: 'Hyannis', state: 'MA', postalCode: '02601' },
      ehr: 'Meditech',
    });
    expect((await directory().findById('c4'))?.address.line).toEqual(['1 A St', 'Floor 2']);
  });

  it('an unknown file type without --format fails with a message', async () => {
    await expect(runCli(t, ['directory', 'import', file('d.txt', '{}')])).rejects.toThrow(/--format/);
  });

  it('export writes every entry as NDJSON in id order, and the export re-imports as is', async () => {
    const out = join(dir, 'export.ndjson');
    await runCli(t, ['directory', 'export', '--out', out]);
    const lines = readFileSync(out, 'utf8').trim().split('\n');
    const ids = lines.map((l) => JSON.parse(l).id);
    expect(ids).toEqual(['c1', 'c4', 'j1', 'j3', 'n1', 'n5']);
    const toStdout = await runCli(t, ['directory', 'export']);
    expect(toStdout.stdout.trim().split('\n')).toEqual(lines);
    const again = summaryOf(await runCli(t, ['directory', 'import', out]));
    expect(again).toEqual({ inserted: 0, updated: 6, rejected: [] });
  });
});

describe('directory seed (e2e)', () => {
  const seedLines = readFileSync(findSeedFile()!, 'utf8').trim().split('\n');

  it('the committed seed holds the 203 Synthea hospitals and the Claims payers for both payer types', () => {
    const seed = seedLines.map((l) => JSON.parse(l));
    expect(seed.filter((e) => e.system_type === 'HealthSystem')).toHaveLength(203);
    const p2p = seed.filter((e) => e.system_type === 'Payer2Payer').map((e) => e.name);
    expect(p2p).toEqual(expect.arrayContaining(['Medicare', 'Medicaid', 'Aetna', 'Blue Cross Blue Shield']));
    expect(seed.filter((e) => e.system_type === 'PayerPatientAccess')).toHaveLength(p2p.length);
    expect(p2p).not.toContain('NO_INSURANCE');
  });

  it('loads on a first start with an empty directory, and only then', async () => {
    const first = await createTestApp();
    let second: Awaited<ReturnType<typeof createApp>> | undefined;
    try {
      const service = first.app.get(DirectoryService);
      expect(await service.count()).toBe(seedLines.length);
      const medicare = await service.search({ query: 'medicare' });
      expect(medicare.results.map((e) => e.system_type).sort()).toEqual([
        'Payer2Payer',
        'PayerPatientAccess',
      ]);
      const hospitals = await service.search({ system_type: 'HealthSystem' });
      expect(hospitals.total).toBe(203);

      // An operator removes an entry; a restart on the same database must not bring it back.
      const model = first.app.get<Model<unknown>>(getModelToken(DIRECTORY_ENTRY_MODEL));
      await model.deleteOne({ _id: medicare.results[0].id });
      second = await createApp(
        parseSettings({ LOG_LEVEL: 'silent' }),
        { uri: process.env.TEST_MONGO_URL!, engine: 'external', stop: async () => undefined },
        first.dbName,
      );
      await second.init();
      expect(await second.get(DirectoryService).count()).toBe(seedLines.length - 1);
    } finally {
      await second?.close();
      await first.close();
    }
  });

  it('a seed racing another instance skips ids that exist and keeps their data', async () => {
    const t = await createTestApp({ DIRECTORY_SEED: 'false' });
    try {
      const service = t.app.get(DirectoryService);
      await service.importRecords([
        { line: 1, record: { id: 'dup', name: 'Kept Name', system_type: 'HealthSystem' } },
      ]);
      const result = await service.seedRecords([
        { line: 1, record: { id: 'dup', name: 'Seed Name', system_type: 'HealthSystem' } },
        { line: 2, record: { id: 'fresh', name: 'Fresh', system_type: 'Payer2Payer' } },
        { line: 3, record: { id: 'bad', name: 'Bad', system_type: 'Nope' } },
      ]);
      expect(result).toEqual({
        inserted: 1,
        rejected: [{ line: 3, reason: expect.stringMatching(/system_type/) }],
      });
      expect((await service.findById('dup'))?.name).toBe('Kept Name');
      expect((await service.search({ query: 'fresh' })).total).toBe(1);
    } finally {
      await t.close();
    }
  });

  it('DIRECTORY_SEED=false leaves the directory empty', async () => {
    const t = await createTestApp({ DIRECTORY_SEED: 'false' });
    try {
      expect(await t.app.get(DirectoryService).count()).toBe(0);
    } finally {
      await t.close();
    }
  });
});
