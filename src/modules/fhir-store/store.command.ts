import type { Command } from 'commander';
import type { WithAppContext } from '../../common/cli-registrar';
import { StoreCheckService } from './store-check.service';
import { storeShard } from './store-shard.command';

/**
 * `store check [--repair]`: prints a JSON report on stdout (progress on stderr); exits 1 when
 * problems were found and not repaired, so a cron job or CI can alert on it.
 */
export function registerStoreCommands(program: Command, withAppContext: WithAppContext): void {
  const store = program.command('store').description('FHIR resource store maintenance');
  store
    .command('check')
    .description('find (and with --repair mend) what an interrupted write left behind')
    .option('--repair', 'copy missing history rows, delete orphan ones, create missing Provenances')
    .action(async (options: { repair?: boolean }) => {
      const report = await withAppContext((app) =>
        app
          .get(StoreCheckService)
          .check(options.repair === true, (message) => process.stderr.write(`${message}\n`)),
      );
      process.stdout.write(`${JSON.stringify(report)}\n`);
      const problems = report.missingHistory + report.orphanHistory + report.missingProvenance;
      if (problems > 0 && !report.repaired) process.exitCode = 1;
    });
  store
    .command('shard')
    .description(
      'shard the resource collections on their keys (a sharded MongoDB or DocumentDB distributed; docs/scaling.md)',
    )
    .action(storeShard);
}
