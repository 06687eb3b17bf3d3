import { NestFactory } from '@nestjs/core';
import { NestExpressApplication } from '@nestjs/platform-express';
import { AppModule } from './app.module';
import { Settings } from './config/settings';
import { configureApp } from './configure-app';
import { DatabaseHandle } from './database/embedded-database';
import { FhirExpressAdapter } from './fhir-http/fhir-express-adapter';

/**
 * Builds the configured HTTP application (used by main and by the e2e tests). `nestRoutes`: every
 * route through Nest's own request pipeline, none compiled (the compiled FHIR routes' A/B).
 */
export async function createApp(
  settings: Settings,
  database: DatabaseHandle,
  dbName?: string,
  options: { nestRoutes?: boolean } = {},
) {
  // FHIR handlers' answers are written by the FHIR reply (src/fhir-http/fhir-reply.ts)
  const adapter = new FhirExpressAdapter(settings.urls.base);
  const app = await NestFactory.create<NestExpressApplication>(
    AppModule.register({ settings, database, dbName }),
    adapter,
    {
      bodyParser: false,
      bufferLogs: true,
      abortOnError: false,
    },
  );
  configureApp(app, settings);
  // FHIR routes get handlers compiled for them when the app's init registers its routes
  if (options.nestRoutes !== true) adapter.compileFhirRoutes(app);
  return app;
}
