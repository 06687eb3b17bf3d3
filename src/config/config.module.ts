import { DynamicModule, Global, Module } from '@nestjs/common';
import { parseSettings, Settings } from './settings';

/** Injection token of the typed, validated `Settings`. */
export const SETTINGS = Symbol('SETTINGS');

@Global()
@Module({})
export class ConfigModule {
  /** `settings` already parsed at boot (main/cli/tests); otherwise parsed from the environment. */
  static register(settings?: Settings): DynamicModule {
    return {
      module: ConfigModule,
      providers: [{ provide: SETTINGS, useValue: settings ?? parseSettings(process.env) }],
      exports: [SETTINGS],
    };
  }
}
