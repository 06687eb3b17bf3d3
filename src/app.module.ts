import { DynamicModule, Module } from '@nestjs/common';
import { ConfigModule } from './config/config.module';
import { Settings } from './config/settings';
import { DatabaseModule } from './database/database.module';
import { DatabaseHandle } from './database/embedded-database';
import { HealthModule } from './health/health.module';
import { LoggingModule } from './logging/logging.module';
import { MetricsModule } from './metrics/metrics.module';
import { FEATURE_MODULES } from './modules/feature-modules';

export interface AppModuleOptions {
  settings: Settings;
  database: DatabaseHandle;
  /** Database name override (tests give each file its own). */
  dbName?: string;
  /** Logs to stderr (the CLI keeps stdout for its results). */
  logToStderr?: boolean;
}

@Module({})
export class AppModule {
  static register(opts: AppModuleOptions): DynamicModule {
    return {
      module: AppModule,
      imports: [
        ConfigModule.register(opts.settings),
        LoggingModule.register(opts.settings, { stderr: opts.logToStderr }),
        DatabaseModule.register(opts.database, opts.dbName),
        HealthModule,
        MetricsModule,
        ...FEATURE_MODULES,
      ],
    };
  }
}
