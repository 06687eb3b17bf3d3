import type { Command } from 'commander';
import { isResourceType, parseFhirVersion } from '@app/fhir';
import type { WithAppContext } from '../../../common/cli-registrar';
import { ReindexService } from './reindex.service';

/**
 * `store reindex [--version v] [--type T]`: rebuilds the search index of stored resources (all
 * versions unless one is named), progress on stderr, one JSON report per version on stdout.
 * Joins the `store` command group of the store's registrar when it exists.
 */
export function registerReindexCommand(program: Command, withAppContext: WithAppContext): void {
  const store =
    program.commands.find((command) => command.name() === 'store') ??
    program.command('store').description('FHIR resource store maintenance');
  store
    .command('reindex')
    .description('rebuild the search index entries of stored resources (after search definitions changed)')
    .option('--version <version>', 'r4, stu3 or dstu2 (default: all three)')
    .option('--type <type>', 'only this resource type')
    .action(async (options: { version?: string; type?: string }) => {
      const version = options.version === undefined ? undefined : parseFhirVersion(options.version);
      if (options.version !== undefined && !version) {
        process.stderr.write(`unknown FHIR version "${options.version}": use r4, stu3 or dstu2\n`);
        process.exitCode = 2;
        return;
      }
      const versions = version ? [version] : (['r4', 'stu3', 'dstu2'] as const);
      const badType = options.type !== undefined && versions.every((v) => !isResourceType(v, options.type!));
      if (badType) {
        process.stderr.write(`unknown resource type "${options.type}"\n`);
        process.exitCode = 2;
        return;
      }
      await withAppContext(async (app) => {
        for (const v of versions) {
          if (options.type !== undefined && !isResourceType(v, options.type)) continue;
          const report = await app
            .get(ReindexService)
            .reindex(v, options.type, (message) => process.stderr.write(`${message}\n`));
          process.stdout.write(`${JSON.stringify(report)}\n`);
        }
      });
    });
}
