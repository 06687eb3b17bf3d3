import type { Command } from 'commander';
import type { WithAppContext } from '../../common/cli-registrar';
import { API_BODY } from '../../common/body-validation';
import { CreateUserBody } from './user.dto';
import { UsersService } from './users.service';

/**
 * `user set-sign-in-secret <plan client_id> <app_user_id>`: a new random sign-in secret for a
 * plan's member (SMART App Launch built-in sign-in), printed once as JSON. The plan's backend can
 * set one of its own choosing with PUT /user-management/v1/user/sign-in-secret.
 */
export function registerUserCommands(program: Command, withAppContext: WithAppContext): void {
  const user = program.command('user').description("a client's users (a health plan's members)");
  user
    .command('set-sign-in-secret <client_id> <app_user_id>')
    .description(
      "a new random sign-in secret for a plan's member; prints {service_user_id, app_user_id, sign_in_secret}",
    )
    .action(async (clientId: string, appUserId: string) => {
      // the app_user_id rule of the HTTP route, through the same pipe
      const member = (await API_BODY.transform(
        { app_user_id: appUserId },
        { type: 'body', metatype: CreateUserBody },
      )) as CreateUserBody;
      const result = await withAppContext((app) =>
        app.get(UsersService).setSignInSecret({ clientId }, member.app_user_id, undefined),
      );
      process.stdout.write(`${JSON.stringify(result)}\n`);
    });
}
