import { execFileSync } from 'child_process';
import { mkdtempSync, openSync, readFileSync, rmSync } from 'fs';
import { tmpdir } from 'os';
import { join } from 'path';
import pino from 'pino';
import { bufferedLogDestination } from './logging.module';

describe('bufferedLogDestination', () => {
  let dir: string;
  beforeEach(() => (dir = mkdtempSync(join(tmpdir(), 'log-destination-'))));
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('writes a short block within 100 ms of its first line', async () => {
    const file = join(dir, 'out.log');
    const fd = openSync(file, 'w');
    const destination = bufferedLogDestination(fd);
    const logger = pino({ level: 'info' }, destination);
    logger.info('first');
    logger.info('second');
    // nothing is written while the service logs (no synchronous write per line)
    expect(readFileSync(file, 'utf8')).toBe('');
    await new Promise((resolve) => setTimeout(resolve, 400));
    const lines = readFileSync(file, 'utf8').trim().split('\n');
    expect(lines.map((line) => JSON.parse(line).msg)).toEqual(['first', 'second']);
    // end() closes the file (and stops the periodic flush)
    await new Promise((resolve) => {
      destination.once('close', resolve);
      destination.end();
    });
  });

  it('writes what is still buffered when the process exits', () => {
    const file = join(dir, 'exit.log');
    // a process that logs one line and exits at once, before any periodic flush
    const script = [
      "const { openSync } = require('fs');",
      "const pino = require('pino');",
      "const { bufferedLogDestination } = require('./logging.module');",
      `const logger = pino({ level: 'info' }, bufferedLogDestination(openSync(${JSON.stringify(file)}, 'w')));`,
      "logger.info('last words');",
      'process.exit(0);',
    ].join('\n');
    execFileSync(process.execPath, ['-r', 'ts-node/register/transpile-only', '-e', script], {
      cwd: __dirname,
      stdio: 'pipe',
    });
    expect(JSON.parse(readFileSync(file, 'utf8').trim()).msg).toBe('last words');
  });
});
