import type { INestApplicationContext } from '@nestjs/common';
import type { Command } from 'commander';

/** Runs `fn` inside a booted application context (no HTTP server) and closes it afterwards. */
export type WithAppContext = <T>(fn: (app: INestApplicationContext) => Promise<T>) => Promise<T>;

/**
 * A feature's CLI commands (e.g. `client create`, `store check`, `directory import`), added to the
 * root program. The CLI hands each registrar the way to boot the app, so features do not import the CLI.
 */
export type CommandRegistrar = (program: Command, withAppContext: WithAppContext) => void;
