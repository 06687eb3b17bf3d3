import { BadRequestException } from '@nestjs/common';
import type { Command } from 'commander';
import type { WithAppContext } from '../../../common/cli-registrar';
import { Settings } from '../../../config/settings';
import { SETTINGS } from '../../../config/config.module';
import { ClientsService } from '../clients/clients.service';
import { FEDERATED_CALLBACK_PATH } from './member-federation.service';
import { federatedSignIn, MemberSignInDoc } from './member-sign-in';

interface MemberSignInOptions {
  client: string;
  builtin?: boolean;
  federated?: boolean;
  issuer?: string;
  oidcClientId?: string;
  oidcClientSecret?: string;
  claim: string;
  oidcScope: string;
}

/** The settings the options ask for; exactly one of --builtin and --federated. */
function requestedSignIn(opts: MemberSignInOptions): MemberSignInDoc {
  if (opts.builtin === opts.federated)
    throw new BadRequestException('give exactly one of --builtin and --federated');
  if (opts.builtin) return { mode: 'builtin' };
  return federatedSignIn({
    issuer: opts.issuer ?? '',
    clientId: opts.oidcClientId ?? '',
    clientSecret: opts.oidcClientSecret ?? '',
    claim: opts.claim,
    scope: opts.oidcScope,
  });
}

/**
 * `client set-member-sign-in`: how a health plan's members sign in when an app asks for their
 * record. Prints the plan's settings (never the provider's secret) and, when federated, the
 * redirect URI to register at the plan's provider.
 */
export function registerMemberSignInCommand(program: Command, withAppContext: WithAppContext): void {
  const client = program.commands.find((c) => c.name() === 'client');
  if (!client) throw new Error('the client commands register first');
  client
    .command('set-member-sign-in')
    .description(
      "how a health plan's members sign in to authorize SMART apps: built in, or at the plan's OpenID provider",
    )
    .requiredOption('--client <client_id>', "the health plan's client_id")
    .option('--builtin', 'members sign in with the secret the plan set through user management (default)')
    .option('--federated', "members sign in at the plan's OpenID Connect provider")
    .option(
      '--issuer <url>',
      "the provider's issuer (discovery at <issuer>/.well-known/openid-configuration)",
    )
    .option('--oidc-client-id <id>', 'this server’s client id at the provider')
    .option('--oidc-client-secret <secret>', 'this server’s client secret at the provider')
    .option('--claim <name>', "the ID token claim holding the member's app_user_id", 'sub')
    .option('--oidc-scope <scopes>', 'scopes asked of the provider (space-separated, with openid)', 'openid')
    .action(async (opts: MemberSignInOptions) => {
      const signIn = requestedSignIn(opts);
      const out = await withAppContext(async (app) => {
        const plan = await app.get(ClientsService).setMemberSignIn(opts.client, signIn);
        const auth = app.get<Settings>(SETTINGS).urls.auth;
        return {
          client_id: plan.clientId,
          member_sign_in: plan.memberSignIn,
          ...(signIn.mode === 'federated' ? { redirect_uri: `${auth}${FEDERATED_CALLBACK_PATH}` } : {}),
        };
      });
      process.stdout.write(`${JSON.stringify(out)}\n`);
    });
}
