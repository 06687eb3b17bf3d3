import type { CommandRegistrar } from '../common/cli-registrar';
import { registerClientCommands } from '../modules/auth/clients/client.cli';
import { registerMemberSignInCommand } from '../modules/auth/member-federation/member-sign-in.cli';
import { registerUserCommands } from '../modules/users/users.cli';
import { registerDirectoryCommands } from '../modules/directory/directory.cli';
import { registerStoreCommands } from '../modules/fhir-store/store.command';
import { registerReindexCommand } from '../modules/fhir-store/search/reindex.command';

/** Each feature registers its CLI commands here in one line. */
export const COMMAND_REGISTRARS: CommandRegistrar[] = [
  registerClientCommands,
  registerMemberSignInCommand,
  registerUserCommands,
  registerDirectoryCommands,
  registerStoreCommands,
  registerReindexCommand,
];
