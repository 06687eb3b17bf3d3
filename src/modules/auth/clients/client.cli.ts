import { readFileSync } from 'node:fs';
import type { Command } from 'commander';
import type { WithAppContext } from '../../../common/cli-registrar';
import { BackendServicesService } from '../backend-services/backend-services.service';
import { ClientRecord } from './client.schema';
import { ClientsService, IssuedClientCredentials, IssuedSmartApp } from './clients.service';

/** JSON of a client for `client list` / `client disable`: never the secret or its hash. */
function view(c: ClientRecord) {
  return {
    client_id: c.clientId,
    name: c.name,
    customer: c.customer,
    programs: c.programs,
    disabled: c.disabled,
    created: c.created.toISOString(),
    ...(c.app
      ? {
          redirect_uris: c.app.redirectUris,
          plan_client_id: c.app.plan,
          token_endpoint_auth_method: c.app.public ? 'none' : 'client_secret_basic',
        }
      : {}),
    ...(c.branding
      ? { plan_display_name: c.branding.name, plan_logo: c.branding.logo ? 'set' : undefined }
      : {}),
  };
}

const LOGO_TYPES: Record<string, string> = {
  png: 'image/png',
  jpg: 'image/jpeg',
  jpeg: 'image/jpeg',
  gif: 'image/gif',
  webp: 'image/webp',
};
const MAX_LOGO_BYTES = 64 * 1024;

/** The logo file as a data: URI (pages inline it: no request to anywhere else). */
function logoDataUri(file: string): string {
  const type = LOGO_TYPES[file.split('.').pop()?.toLowerCase() ?? ''];
  if (!type) throw new Error('the logo must be a .png, .jpg, .gif or .webp file');
  const bytes = readFileSync(file);
  if (bytes.length > MAX_LOGO_BYTES) throw new Error(`the logo is larger than ${MAX_LOGO_BYTES} bytes`);
  return `data:${type};base64,${bytes.toString('base64')}`;
}

function print(value: unknown): void {
  process.stdout.write(`${JSON.stringify(value)}\n`);
}

/**
 * `client create|list|rotate-secret|disable`: operators script these commands, so one JSON value on stdout. The plain
 * secret appears only in the output of create and rotate-secret.
 */
export function registerClientCommands(program: Command, withAppContext: WithAppContext): void {
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
    .option(
      '--redirect-uris <list>',
      'a SMART app of the plan named by --customer: its comma-separated redirect URIs (exact match at authorize)',
    )
    .option('--public', 'a SMART app with no secret (browser or device app; must use PKCE)')
    .action(
      async (opts: {
        name: string;
        customer?: string;
        programs: string;
        redirectUris?: string;
        public?: boolean;
      }) => {
        const created = await withAppContext<IssuedClientCredentials | IssuedSmartApp>((app) => {
          const clients = app.get(ClientsService);
          if (opts.redirectUris === undefined && !opts.public)
            return clients.create({
              name: opts.name,
              customer: opts.customer,
              programs: opts.programs.split(','),
            });
          return clients.createApp({
            name: opts.name,
            customer: opts.customer ?? '',
            programs: opts.programs.split(','),
            redirectUris: (opts.redirectUris ?? '').split(','),
            public: opts.public === true,
          });
        });
        print(created);
      },
    );
  client
    .command('set-redirect-uris <client_id> <uris>')
    .description("replace a SMART app's redirect URIs (comma-separated)")
    .action(async (clientId: string, uris: string) =>
      print(
        view(
          await withAppContext((app) => app.get(ClientsService).setRedirectUris(clientId, uris.split(','))),
        ),
      ),
    );
  client
    .command('set-plan-branding <client_id>')
    .description("the name and logo a plan's members see on the sign-in and consent pages")
    .option('--display-name <name>', 'the plan name shown to members')
    .option('--logo <file>', 'a PNG, JPEG, GIF or WebP file of at most 64 KB')
    .action(async (clientId: string, opts: { displayName?: string; logo?: string }) =>
      print(
        view(
          await withAppContext((app) =>
            app.get(ClientsService).setBranding(clientId, {
              name: opts.displayName,
              logo: opts.logo === undefined ? undefined : logoDataUri(opts.logo),
            }),
          ),
        ),
      ),
    );
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
