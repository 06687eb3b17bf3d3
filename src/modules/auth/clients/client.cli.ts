import { readFileSync } from 'node:fs';
import type { Command } from 'commander';
import { withAppContext } from '../../../cli/cli-context';
import { BackendServicesService } from '../backend-services/backend-services.service';
import { ClientRecord } from './client.schema';
import { ClientsService } from './clients.service';

/** JSON of a client for `client list` / `client disable`: never the secret or its hash. */
function view(c: ClientRecord) {
  return {
    client_id: c.clientId,
    name: c.name,
    customer: c.customer,
    programs: c.programs,
    disabled: c.disabled,
    created: c.created.toISOString(),
  };
}

function print(value: unknown): void {
  process.stdout.write(`${JSON.stringify(value)}\n`);
}

/**
 * `client create|list|rotate-secret|disable`: operators script these commands, so one JSON value on stdout. The plain
 * secret appears only in the output of create and rotate-secret.
 */
export function registerClientCommands(program: Command): void {
  const client = program.command('client').description('client applications (client_id + client_secret)');
  client
    .command('create')
    .description('create a client application; prints {client_id, client_secret, name, customer, programs}')
    .requiredOption('--name <name>', 'display name')
    .option(
      '--customer <slug>',
      'customer slug for the population export path /v1/<customer>/... (default: from name)',
    )
    .option('--programs <list>', 'comma-separated: patient-access, epa, provider-access, p2p', '')
    .action(async (opts: { name: string; customer?: string; programs: string }) => {
      const created = await withAppContext((app) =>
        app.get(ClientsService).create({
          name: opts.name,
          customer: opts.customer,
          programs: opts.programs.split(','),
        }),
      );
      print(created);
    });
  client
    .command('list')
    .description('list client applications as a JSON array (no secrets)')
    .action(async () => print((await withAppContext((app) => app.get(ClientsService).list())).map(view)));
  client
    .command('rotate-secret <client_id>')
    .description('issue a new client_secret (the old one stops working); prints the new credentials')
    .action(async (clientId: string) =>
      print(await withAppContext((app) => app.get(ClientsService).rotateSecret(clientId))),
    );
  client
    .command('set-jwks <client_id> <file_or_url>')
    .description(
      'register the public keys (JWK Set file, or its http(s) URL) of a SMART Backend Services client',
    )
    .action(async (clientId: string, source: string) => {
      const keys = /^https?:\/\//.test(source) ? { jwksUrl: source } : { jwks: readFileSync(source, 'utf8') };
      await withAppContext((app) => app.get(BackendServicesService).setKeys(clientId, keys));
      print({ client_id: clientId, ...('jwksUrl' in keys ? { jwks_uri: source } : { jwks: 'registered' }) });
    });
  client
    .command('disable <client_id>')
    .description('disable a client: its secret and tokens stop working')
    .action(async (clientId: string) =>
      print(view(await withAppContext((app) => app.get(ClientsService).disable(clientId)))),
    );
}
