#!/usr/bin/env node
import 'reflect-metadata';
import { Command, CommanderError } from 'commander';
import { SettingsError } from '../config/settings';
import { withAppContext } from './cli-context';
import { COMMAND_REGISTRARS } from './commands';

/** `npm run -s cli -- <command>`: operator commands. Results on stdout, everything else on stderr. */
export function buildProgram(): Command {
  const program = new Command('fhir-data-service')
    .description('Operator commands of the FHIR data service (uses MONGO_URL or the embedded database)')
    .showHelpAfterError()
    .exitOverride();
  for (const register of COMMAND_REGISTRARS) register(program, withAppContext);
  return program;
}

async function main(): Promise<void> {
  try {
    await buildProgram().parseAsync(process.argv);
  } catch (e) {
    if (e instanceof CommanderError) process.exit(e.exitCode);
    if (e instanceof SettingsError) {
      process.stderr.write(`bad settings:\n${e.problems.map((p) => `  - ${p}`).join('\n')}\n`);
      process.exit(2);
    }
    process.stderr.write(`error: ${(e as Error).message}\n`);
    process.exit(1);
  }
}

if (require.main === module) void main();
