import { buildProgram } from '../../src/cli/cli';
import type { TestApp } from './test-app';

export interface CliRun {
  stdout: string;
  stderr: string;
}

/** Runs the real `cli` program in-process against the test app's database (jest tests only). */
export async function runCliInProcess(t: TestApp, args: string[]): Promise<CliRun> {
  const saved = { url: process.env.MONGO_URL, db: process.env.MONGO_DB, seed: process.env.DIRECTORY_SEED };
  process.env.MONGO_URL = process.env.TEST_MONGO_URL;
  process.env.MONGO_DB = t.dbName;
  process.env.DIRECTORY_SEED = 'false';
  const out: string[] = [];
  const err: string[] = [];
  const stdout = jest
    .spyOn(process.stdout, 'write')
    .mockImplementation((chunk: any) => out.push(String(chunk)) > 0);
  const stderr = jest
    .spyOn(process.stderr, 'write')
    .mockImplementation((chunk: any) => err.push(String(chunk)) > 0);
  try {
    await buildProgram().parseAsync(['node', 'cli', ...args]);
  } finally {
    stdout.mockRestore();
    stderr.mockRestore();
    for (const [key, value] of [
      ['MONGO_URL', saved.url],
      ['MONGO_DB', saved.db],
      ['DIRECTORY_SEED', saved.seed],
    ] as const) {
      if (value === undefined) delete process.env[key];
      else process.env[key] = value;
    }
  }
  return { stdout: out.join(''), stderr: err.join('') };
}
