import { existsSync, mkdtempSync, rmSync } from 'fs';
import { tmpdir } from 'os';
import { join } from 'path';
import { parseEngineSettings } from '../config/settings';
import { resolveDatabase } from './embedded-database';

describe('resolveDatabase with MONGO_URL (production)', () => {
  it('uses the URL as it is: no embedded engine, no lock, no record, no supervision, nothing written', async () => {
    const dir = join(mkdtempSync(join(tmpdir(), 'fhir-external-')), 'data');
    try {
      const gaveUp: Error[] = [];
      const handle = await resolveDatabase('mongodb://db.example:27017/fhir', dir, parseEngineSettings({}), {
        role: 'server',
        onGiveUp: (e) => gaveUp.push(e),
      });
      expect(handle.engine).toBe('external');
      expect(handle.uri).toBe('mongodb://db.example:27017/fhir');
      await handle.stop();
      expect(existsSync(dir)).toBe(false);
      expect(gaveUp).toEqual([]);
    } finally {
      rmSync(join(dir, '..'), { recursive: true, force: true });
    }
  });
});
