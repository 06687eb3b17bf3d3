import { createWriteStream, readFileSync } from 'fs';
import { once } from 'events';
import { SingleBar } from 'cli-progress';
import type { Command } from 'commander';
import type { WithAppContext } from '../../common/cli-registrar';
import { formatFromFileName, ImportFormat, parseImport } from './directory-import-parser';
import { DirectoryService, ImportSummary } from './directory.service';

const FORMATS: ImportFormat[] = ['ndjson', 'json', 'csv'];
/** Below this many lines a progress bar is noise. */
const PROGRESS_MIN_LINES = 2000;

function countLines(text: string): number {
  let n = 1;
  for (let i = text.indexOf('\n'); i >= 0; i = text.indexOf('\n', i + 1)) n++;
  return n;
}

/** Reads, parses and upserts one file, with a progress bar on stderr for large files. */
export async function importDirectoryFile(
  directory: DirectoryService,
  file: string,
  format: ImportFormat,
  showProgress: boolean,
): Promise<ImportSummary> {
  const text = readFileSync(file, 'utf8');
  const totalLines = countLines(text);
  const bar =
    showProgress && totalLines >= PROGRESS_MIN_LINES
      ? new SingleBar({
          stream: process.stderr,
          format: 'importing [{bar}] {percentage}% | line {value}/{total}',
        })
      : null;
  bar?.start(totalLines, 0);
  try {
    return await directory.importRecords(parseImport(text, format), (p) => bar?.update(p.line));
  } finally {
    bar?.update(totalLines);
    bar?.stop();
  }
}

/** `directory import <file>` and `directory export`. */
export function registerDirectoryCommands(program: Command, withAppContext: WithAppContext): void {
  const directory = program.command('directory').description('Provider and health-system directory');

  directory
    .command('import <file>')
    .description('Upsert entries by id from NDJSON (.ndjson/.jsonl), a JSON array (.json) or CSV (.csv)')
    .option('--format <format>', `one of ${FORMATS.join(', ')} (default: from the file name)`)
    .option('--no-progress', 'no progress bar')
    .action(async (file: string, opts: { format?: string; progress: boolean }) => {
      const format = (opts.format ?? formatFromFileName(file)) as ImportFormat | null;
      if (!format || !FORMATS.includes(format)) {
        throw new Error(`cannot tell the format of ${file}: use --format ${FORMATS.join('|')}`);
      }
      const summary = await withAppContext((app) =>
        importDirectoryFile(
          app.get(DirectoryService),
          file,
          format,
          opts.progress && process.stderr.isTTY === true,
        ),
      );
      process.stdout.write(`${JSON.stringify(summary)}\n`);
      process.stderr.write(
        `directory import: ${summary.inserted} inserted, ${summary.updated} updated, ${summary.rejected.length} rejected\n`,
      );
      for (const r of summary.rejected) process.stderr.write(`  line ${r.line}: ${r.reason}\n`);
    });

  directory
    .command('export')
    .description('Write every entry as NDJSON (stdout, or --out <file>), in id order')
    .option('--out <file>', 'file to write instead of stdout')
    .action(async (opts: { out?: string }) => {
      const out = opts.out ? createWriteStream(opts.out) : process.stdout;
      const written = await withAppContext(async (app) => {
        let n = 0;
        for await (const line of app.get(DirectoryService).exportNdjson()) {
          if (!out.write(line)) await once(out, 'drain');
          n++;
        }
        return n;
      });
      if (opts.out) {
        out.end();
        await once(out, 'finish');
      }
      process.stderr.write(`directory export: ${written} entries\n`);
    });
}
