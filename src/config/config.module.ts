import { DynamicModule, Global, Module } from '@nestjs/common';
import { ConfigModule as NestConfigModule } from '@nestjs/config';
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
      imports: [
        NestConfigModule.forRoot({
          isGlobal: true,
          ignoreEnvFile: true,
          // the same validation as at boot, so the ConfigService never holds an unchecked value
          validate: (env) => ({ ...env, settings: settings ?? parseSettings(env) }),
        }),
      ],
      providers: [{ provide: SETTINGS, useValue: settings ?? parseSettings(process.env) }],
      exports: [SETTINGS],
    };
  }
}
