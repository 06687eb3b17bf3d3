// Starts the embedded engine of the new kit on a data folder (argv[2]) in a process of its own and
// prints each report line; the process kills itself (SIGKILL, its database children with it) right
// after the first line matching argv[3]: a crash at an exact point of the upgrade.
import { parseEngineSettings } from '../../src/config/settings';
import { documentDbPaths, startDocumentDb } from '../../src/database/documentdb-process';

const [, , dir, crashAfter] = process.argv;
const paths = documentDbPaths(parseEngineSettings({ DOCUMENTDB_KIT: 'next' }));
void startDocumentDb(paths, dir, undefined, (line) => {
  process.stdout.write(`${line}\n`);
  if (new RegExp(crashAfter).test(line)) process.kill(process.pid, 'SIGKILL');
}).then(
  (db) => db.stop(),
  (e: Error) => {
    process.stderr.write(`${e.message}\n`);
    process.exit(1);
  },
);
