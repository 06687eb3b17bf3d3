import { NestFactory } from '@nestjs/core';
import { NestExpressApplication } from '@nestjs/platform-express';
import { AppModule } from './app.module';
import { Settings } from './config/settings';
import { configureApp } from './configure-app';
import { DatabaseHandle } from './database/embedded-database';
import { FhirExpressAdapter } from './fhir-http/fhir-express-adapter';

/** Builds the configured HTTP application (used by main and by the e2e tests). */
export async function createApp(settings: Settings, database: DatabaseHandle, dbName?: string) {
  const app = await NestFactory.create<NestExpressApplication>(
    AppModule.register({ settings, database, dbName }),
    // FHIR handlers' answers are written by the FHIR reply (src/fhir-http/fhir-reply.ts)
    new FhirExpressAdapter(settings.urls.base),
    {
      bodyParser: false,
      bufferLogs: true,
      abortOnError: false,
    },
  );
  configureApp(app, settings);
  return app;
}
